/** The store checks on the page (OPFS through writable streams, Cache Storage), then in a worker. */
import { CacheStorageEntries } from "../../../src/store/cache_storage.ts";
import { OpfsStorage } from "../../../src/store/opfs.ts";
import { browserStore } from "../../../src/store/browser.ts";
import { runChecks } from "./report.ts";
import { type Check, storeChecks } from "./store_checks.ts";

const opfs = await OpfsStorage.open("kiln-test-main");
const cache = await CacheStorageEntries.open("kiln-test-main");
const checks: Check[] = [
  ["page: browserStore picks OPFS", async () => {
    const s = await browserStore();
    if (s?.storage.kind !== "opfs") throw new Error(`got ${s?.storage.kind}`);
  }],
  ...(opfs ? await storeChecks("page opfs", opfs) : []),
  ...(cache ? await storeChecks("page cache-storage", cache) : []),
  ["worker: every check passes", async () => {
    const worker = new Worker(new URL("./store_worker.ts", import.meta.url), { type: "module" });
    const results = await new Promise<{ name: string; passed: boolean; message?: string }[]>(
      (resolve, reject) => {
        worker.onmessage = (e) => resolve(e.data);
        worker.onerror = (e) => reject(new Error(e.message));
        worker.postMessage("go");
      },
    );
    worker.terminate();
    const bad = results.filter((r) => !r.passed);
    if (results.length < 15 || bad.length > 0) throw new Error(JSON.stringify(results, null, 1));
    return results.map((r) => `${r.name}${r.message ? ` (${r.message})` : ""}`).join("; ");
  }],
];
if (!opfs || !cache) {
  checks.unshift([
    "page: OPFS and Cache Storage exist",
    () => Promise.reject(new Error(`opfs ${!!opfs}, cache ${!!cache}`)),
  ]);
}
await runChecks(checks);
