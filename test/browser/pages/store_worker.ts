/// <reference lib="webworker" />
/** The store checks in a dedicated worker (OPFS written through a sync access handle). */
import { CacheStorageEntries } from "../../../src/store/cache_storage.ts";
import { OpfsStorage } from "../../../src/store/opfs.ts";
import { runAll, storeChecks } from "./store_checks.ts";

addEventListener("message", async () => {
  const opfs = await OpfsStorage.open("kiln-test-worker");
  const cache = await CacheStorageEntries.open("kiln-test-worker");
  const sync = typeof (globalThis as { FileSystemSyncAccessHandle?: unknown })
    .FileSystemSyncAccessHandle === "function";
  const results = [
    { name: "worker: OPFS with sync access handles", passed: opfs !== undefined && sync },
    ...await runAll([
      ...(opfs ? await storeChecks("worker opfs", opfs) : []),
      ...(cache ? await storeChecks("worker cache-storage", cache) : []),
    ]),
  ];
  postMessage(results);
});
