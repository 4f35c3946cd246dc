/**
 * The model store against a loopback server with faults (test/support/range_server.ts), on the
 * memory backend and on a directory: first download, reload with no request, resume after a
 * cut, corruption, quota, a file changing mid-download, a server ignoring Range or lying about
 * lengths, HTML, list/delete, progress.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { dirStorage } from "../adapters/deno/dir_storage.ts";
import { EngineError } from "../contract/errors.ts";
import type { DownloadProgress } from "../formats/source.ts";
import { rangeServerRunner } from "../../test/support/range_server.ts";
import { CacheStorageEntries } from "./cache_storage.ts";
import { MemoryStorage } from "./memory.ts";
import { entryKey, type EntryStorage } from "./storage.ts";
import { ModelStore, type ModelStoreOptions } from "./store.ts";

const SIZE = 1_000_000;
const CHUNK = 64 * 1024;
const weights = new Uint8Array(SIZE).map((_, i) => (i * 2654435761) >>> 24);
const config = JSON.stringify({ hello: "world" });
const dir = await Deno.makeTempDir();
await Deno.writeFile(`${dir}/weights.bin`, weights);
await Deno.writeTextFile(`${dir}/config.json`, config);

const withServer = rangeServerRunner(`${dir}/`);

const store = (storage: EntryStorage, o: ModelStoreOptions = {}) =>
  new ModelStore(storage, { chunkBytes: CHUNK, backoffMs: 1, smallBytes: 4096, ...o });

async function readAll(storage: EntryStorage, base: string, name: string) {
  const src = await storage.source(entryKey(new URL(name, base).href), name);
  return src && await src.read(0, src.size);
}

const backends: [string, () => Promise<EntryStorage>][] = [
  ["memory", () => Promise.resolve(new MemoryStorage())],
  ["dir", async () => dirStorage(await Deno.makeTempDir())],
  // Deno has Cache Storage too; chunks of 100,000 bytes, not a multiple of the Range size.
  [
    "cache-storage",
    async () => new CacheStorageEntries(await caches.open(crypto.randomUUID()), 100_000),
  ],
];

for (const [kind, make] of backends) {
  Deno.test(`store (${kind}): first download, then a reload reads with no request`, async () => {
    const storage = await make();
    await withServer({ etag: "sha256" }, async (s) => {
      const files = store(storage).files(s.base);
      strictEqual(await (await files.open("config.json"))!.read(0, 5).then((b) => b.length), 5);
      strictEqual(await files.open("absent.json"), undefined);
      const w = await files.open("weights.bin");
      await files.prepare!(["weights.bin"]);
      deepStrictEqual(await w!.read(0, SIZE), weights);
      const before = s.served.length;
      const again = store(storage).files(s.base);
      const text = await (await again.open("config.json"))!.read(0, config.length);
      strictEqual(new TextDecoder().decode(text), config);
      strictEqual(await again.open("absent.json"), undefined);
      const w2 = await again.open("weights.bin");
      await again.prepare!(["weights.bin"]);
      deepStrictEqual(await w2!.read(0, SIZE), weights);
      strictEqual(s.served.length, before, "the reload made no request");
    });
  });

  Deno.test(`store (${kind}): a download cut at 40% resumes from 40% and verifies`, async () => {
    const storage = await make();
    const at = Math.floor(SIZE * 0.4);
    await withServer({ etag: "sha256", cut: [{ path: "weights.bin", at }] }, async (s) => {
      // No retries: the cut ends the first try (a closed tab).
      await rejects(store(storage, { retries: 0 }).files(s.base).prepare!(["weights.bin"]), {
        name: "EngineError",
        type: "CannotConnect",
      } as Partial<EngineError>);
      const stored = await storage.length(entryKey(`${s.base}weights.bin`));
      ok(stored > 0 && stored <= at, `stored ${stored} of ${at}`);
      strictEqual((await storage.meta(entryKey(`${s.base}weights.bin`)))?.complete, false);
      const sent = s.bytesSent("weights.bin");
      await store(storage).files(s.base).prepare!(["weights.bin"]);
      ok(s.ranges.includes(`bytes=${stored}-${stored + CHUNK - 1}`), s.ranges.join(" "));
      strictEqual(s.bytesSent("weights.bin") - sent, SIZE - stored, "only the rest was sent");
      deepStrictEqual(await readAll(storage, s.base, "weights.bin"), weights);
      strictEqual((await storage.meta(entryKey(`${s.base}weights.bin`)))?.complete, true);
    });
  });

  Deno.test(`store (${kind}): a corrupted partial entry is refetched, never served`, async () => {
    const storage = await make();
    await withServer({
      linkedSha: true,
      etag: "version",
      cut: [{ path: "weights.bin", at: SIZE / 2 }],
    }, async (s) => {
      await rejects(store(storage, { retries: 0 }).files(s.base).prepare!(["weights.bin"]));
      const k = entryKey(`${s.base}weights.bin`);
      const n = await storage.length(k);
      // Flip stored bytes (as a disk might).
      const w = await storage.writer(k, 0);
      await w.write(weights.slice(0, n).map((b) => b ^ 1));
      await w.close();
      await store(storage).files(s.base).prepare!(["weights.bin"]);
      deepStrictEqual(await readAll(storage, s.base, "weights.bin"), weights);
      ok(s.bytesSent("weights.bin") >= SIZE + n, "fetched whole again");
    });
  });

  Deno.test(`store (${kind}): a complete entry truncated or flipped is fetched again`, async () => {
    const storage = await make();
    await withServer({ etag: "sha256" }, async (s) => {
      await store(storage).files(s.base).prepare!(["weights.bin"]);
      const k = entryKey(`${s.base}weights.bin`);
      const w = await storage.writer(k, SIZE - 10);
      await w.close();
      const files = store(storage).files(s.base);
      const src = await files.open("weights.bin");
      strictEqual(src!.size, SIZE);
      await files.prepare!(["weights.bin"]);
      deepStrictEqual(await src!.read(0, SIZE), weights);
      const flip = await storage.writer(k, SIZE - 1);
      await flip.write(new Uint8Array([weights[SIZE - 1]! ^ 0xff]));
      await flip.close();
      const sent = s.bytesSent("weights.bin");
      const checked = store(storage, { verify: "sha256" }).files(s.base);
      await checked.prepare!(["weights.bin"]);
      strictEqual(s.bytesSent("weights.bin") - sent, SIZE, "refetched once");
      deepStrictEqual(await readAll(storage, s.base, "weights.bin"), weights);
    });
  });
}

Deno.test("store: a hash that never matches is an InvalidArgument after one refetch", async () => {
  const storage = new MemoryStorage();
  await withServer({ linkedSha: true, wrongSha: "ab".repeat(32) }, async (s) => {
    await rejects(store(storage).files(s.base).prepare!(["weights.bin"]), (e: EngineError) => {
      strictEqual(e.type, "InvalidArgument");
      ok(e.message.includes(`expected ${"ab".repeat(32)}, got `), e.message);
      return true;
    });
    strictEqual(s.bytesSent("weights.bin"), 2 * SIZE);
    strictEqual(await storage.meta(entryKey(`${s.base}weights.bin`)), undefined);
  });
});

Deno.test("store: a model that cannot fit the quota is refused before any download", async () => {
  await withServer({}, async (s) => {
    let persisted = 0;
    const st = store(new MemoryStorage(), {
      estimate: () => Promise.resolve({ usage: 400_000, quota: 900_000 }),
      persist: () => Promise.resolve(++persisted > 0),
    });
    await rejects(st.files(s.base).prepare!(["weights.bin"]), (e: EngineError) => {
      strictEqual(e.type, "ResourceExhausted");
      ok(e.message.includes(`needs ${SIZE} more bytes; 500000 are available`), e.message);
      return true;
    });
    strictEqual(s.gets("weights.bin"), 0);
    const fits = store(new MemoryStorage(), {
      estimate: () => Promise.resolve({ usage: 0, quota: 2 * SIZE }),
      persist: () => Promise.resolve(++persisted > 0),
    });
    await fits.files(s.base).prepare!(["weights.bin"]);
    strictEqual(persisted, 1);
  });
});

Deno.test("store: a file that changes between two Ranges is fetched again from zero", async () => {
  const storage = new MemoryStorage();
  await withServer(
    { etag: "version", linkedSha: true, change: { path: "weights.bin", afterGets: 3 } },
    async (s) => {
      await store(storage).files(s.base).prepare!(["weights.bin"]);
      deepStrictEqual(
        await readAll(storage, s.base, "weights.bin"),
        weights.map((b) => b ^ 0xff),
      );
      ok(s.ranges.filter((r) => r.startsWith("bytes=0-")).length >= 2, s.ranges.join(" "));
      strictEqual((await storage.meta(entryKey(`${s.base}weights.bin`)))?.validator, '"v2"');
    },
  );
});

Deno.test("store: a server that ignores Range is read whole, from zero, after a cut", async () => {
  const storage = new MemoryStorage();
  await withServer(
    { range: false, etag: "sha256", cut: [{ path: "weights.bin", at: SIZE * 0.4 }] },
    async (s) => {
      await store(storage).files(s.base).prepare!(["weights.bin"]);
      deepStrictEqual(await readAll(storage, s.base, "weights.bin"), weights);
      strictEqual(s.gets("weights.bin"), 2);
    },
  );
});

Deno.test("store: a lying Content-Length is an InvalidArgument; the entry is not complete", async () => {
  const storage = new MemoryStorage();
  await withServer({ lieLength: 100 }, async (s) => {
    await rejects(store(storage).files(s.base).prepare!(["weights.bin"]), {
      type: "InvalidArgument",
    } as Partial<EngineError>);
    strictEqual((await storage.meta(entryKey(`${s.base}weights.bin`)))?.complete, false);
    strictEqual(await store(storage).files(s.base).open("weights.bin").then((w) => w?.size), SIZE);
  });
});

Deno.test("store: an HTML page instead of the file is an InvalidArgument", async () => {
  const storage = new MemoryStorage();
  await withServer({ htmlGets: true }, async (s) => {
    await rejects(store(storage).files(s.base).prepare!(["weights.bin"]), (e: EngineError) => {
      strictEqual(e.type, "InvalidArgument");
      ok(e.message.includes("HTML"), e.message);
      return true;
    });
    strictEqual((await storage.meta(entryKey(`${s.base}weights.bin`)))?.complete, false);
  });
});

Deno.test("store: an absent file is asked about again until a load gets to its weights", async () => {
  const storage = new MemoryStorage();
  await withServer({ fallback: "<!doctype html><title>app</title>" }, async (s) => {
    const files = store(storage).files(s.base);
    strictEqual(await files.open("later.bin"), undefined);
    const k = entryKey(`${s.base}later.bin`);
    strictEqual((await storage.meta(k))?.absent, "html", "marked as HTML");
    // No load got to its weights (a failed one): the next asks again.
    let asked = s.served.length;
    strictEqual(await store(storage).files(s.base).open("later.bin"), undefined);
    ok(s.served.length > asked, "asked again");
    // A load that downloads its weights confirms the mark: a reload then asks nothing.
    const ok2 = store(storage).files(s.base);
    strictEqual(await ok2.open("later.bin"), undefined);
    await ok2.prepare!(["weights.bin"]);
    strictEqual((await storage.meta(k))?.confirmed, true, "confirmed");
    asked = s.served.length;
    strictEqual(await store(storage).files(s.base).open("later.bin"), undefined);
    strictEqual(s.served.length, asked, "no request for a confirmed absence");
    ok(files.describeMissing!("later.bin").includes("HTML"));
  });
});

Deno.test("store: list and delete", async () => {
  const storage = new MemoryStorage();
  await withServer({}, async (s) => {
    const st = store(storage);
    await st.files(s.base).open("config.json");
    await st.files(s.base).prepare!(["weights.bin"]);
    const [m, ...rest] = await st.list();
    strictEqual(rest.length, 0);
    strictEqual(m!.base, s.base);
    strictEqual(m!.bytes, SIZE + config.length);
    deepStrictEqual(
      m!.files.map((f) => [f.name, f.size, f.loaded, f.complete]).sort(),
      [["config.json", config.length, config.length, true], ["weights.bin", SIZE, SIZE, true]],
    );
    strictEqual(await st.delete(s.base.slice(0, -1)), true);
    deepStrictEqual(await st.list(), []);
    strictEqual(storage.bytes.size, 0);
    strictEqual(await st.delete(s.base), false);
  });
});

Deno.test("store: progress is monotone with a rate and time left", async () => {
  await withServer({ throttle: 2_000_000 }, async (s) => {
    const seen: DownloadProgress[] = [];
    await store(new MemoryStorage()).files(s.base).prepare!(["weights.bin", "config.json"], (p) => {
      seen.push(structuredClone(p));
    });
    ok(seen.length >= 3, `${seen.length} reports`);
    for (let i = 1; i < seen.length; i++) {
      ok(seen[i]!.overall.loaded >= seen[i - 1]!.overall.loaded);
    }
    const last = seen[seen.length - 1]!;
    strictEqual(last.overall.total, SIZE + config.length);
    strictEqual(last.overall.loaded, last.overall.total);
    const mid = seen.find((p) => p.file === "weights.bin" && p.fileProgress.secondsLeft! > 0)!;
    ok(mid, "a report with time left");
    const rate = mid.fileProgress.bytesPerSecond;
    ok(rate > 200_000 && rate < 20_000_000, `rate ${rate}`);
    ok(Math.abs(mid.fileProgress.secondsLeft! - (SIZE - mid.fileProgress.loaded) / rate) < 1e-6);
  });
});
