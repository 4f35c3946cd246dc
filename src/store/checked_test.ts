/**
 * The model store checks what it serves: a byte flipped at rest in a stored chunk (the first,
 * one in the middle, the last, a partial last one) is caught when that chunk is first read, by
 * reads that cover whole chunks and by reads that cut them; the load gets the true bytes from the
 * network, the entry is dropped and the next open fetches it again; with the network gone too the
 * read is an `EngineError` naming the chunk; an entry stored before chunk hashes gets them on its
 * first open. On the memory backend, a directory and Cache Storage, against a loopback server.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { dirStorage } from "../adapters/deno/dir_storage.ts";
import type { EngineError } from "../contract/errors.ts";
import { type ByteSource, readInto } from "../formats/source.ts";
import { rangeServerRunner } from "../../test/support/range_server.ts";
import { CacheStorageEntries } from "./cache_storage.ts";
import { ChunkCheck } from "./checked.ts";
import { MemoryStorage } from "./memory.ts";
import { entryKey, type EntryStorage } from "./storage.ts";
import { ModelStore, type ModelStoreOptions } from "./store.ts";
import { ChunkHasher } from "./xxh32.ts";

const SIZE = 1_000_000;
/** Hashed chunks of 96 KiB: 11 chunks, the last of 16,960 bytes. */
const PARTIAL = 96 * 1024;
/** Hashed chunks of 100,000 bytes: 10 whole chunks. */
const EVEN = 100_000;
const weights = new Uint8Array(SIZE).map((_, i) => (i * 2654435761) >>> 24);
const dir = await Deno.makeTempDir();
await Deno.writeFile(`${dir}/weights.bin`, weights);

const withServer = rangeServerRunner(`${dir}/`);

const store = (storage: EntryStorage, o: ModelStoreOptions = {}) =>
  new ModelStore(storage, { chunkBytes: 64 * 1024, backoffMs: 1, retries: 0, ...o });

/** Flip the stored byte at `at` (rewriting the entry from there, as every backend allows). */
async function flip(storage: EntryStorage, key: string, at: number) {
  const src = await storage.source(key, "weights.bin");
  const rest = await src!.read(at, src!.size - at);
  const w = await storage.writer(key, at);
  await w.write(rest.map((b, i) => i === 0 ? b ^ 0x10 : b));
  await w.close();
}

/** `fetch` that fails once `offline` is set, as a lost network does. */
function network() {
  const net = { offline: false, fetch: undefined as unknown as typeof fetch };
  net.fetch = (input, init) =>
    net.offline ? Promise.reject(new TypeError("network is unreachable")) : fetch(input, init);
  return net;
}

/** The whole file through `src`: by `readInto` at chunk-aligned offsets, or `read`s that cut. */
async function readAll(src: ByteSource, how: "whole chunks" | "cut chunks", chunk: number) {
  const out = new Uint8Array(SIZE);
  const step = how === "whole chunks" ? 2 * chunk : 150_001;
  for (let at = 0; at < SIZE; at += step) {
    const n = Math.min(step, SIZE - at);
    if (how === "whole chunks") await readInto(src, at, out.subarray(at, at + n));
    else out.set(await src.read(at, n), at);
  }
  return out;
}

const backends: [string, () => Promise<EntryStorage>][] = [
  ["memory", () => Promise.resolve(new MemoryStorage())],
  ["dir", async () => dirStorage(await Deno.makeTempDir())],
  [
    "cache-storage",
    async () => new CacheStorageEntries(await caches.open(crypto.randomUUID()), 100_000),
  ],
];

/** Where a byte is flipped, with which chunk size, read how. */
const cases: [string, number, number, "whole chunks" | "cut chunks"][] = [
  ["the middle of a middle chunk", PARTIAL, 4 * PARTIAL + 5_000, "whole chunks"],
  ["the middle of a middle chunk", PARTIAL, 4 * PARTIAL + 5_000, "cut chunks"],
  ["the first chunk", EVEN, 0, "cut chunks"],
  ["the last chunk", EVEN, SIZE - 1, "whole chunks"],
  ["a partial last chunk", PARTIAL, SIZE - 7, "cut chunks"],
  ["a partial last chunk", PARTIAL, SIZE - 7, "whole chunks"],
];

for (const [kind, make] of backends) {
  for (const [where, chunk, at, how] of cases) {
    Deno.test(`checked store (${kind}): a byte flipped in ${where}, read by ${how}`, async () => {
      const storage = await make();
      await withServer({ etag: "version" }, async (s) => {
        const o = { hashChunkBytes: chunk };
        const key = entryKey(`${s.base}weights.bin`);
        await store(storage, o).files(s.base).prepare!(["weights.bin"]);
        const recorded = (await storage.meta(key))?.chunks;
        strictEqual(recorded?.xxh32.length, 8 * Math.ceil(SIZE / chunk));
        await flip(storage, key, at);
        const files = store(storage, o).files(s.base);
        const src = await files.open("weights.bin");
        await files.prepare!(["weights.bin"]);
        const before = s.served.length;
        // Lazily: chunks before the bad one are read from the store alone.
        const bad = Math.floor(at / chunk);
        if (bad > 0) {
          deepStrictEqual(await src!.read(0, bad * chunk), weights.subarray(0, bad * chunk));
          strictEqual(s.served.length, before, "no request before the bad chunk is read");
          ok(await storage.meta(key), "kept until the bad chunk is read");
        }
        deepStrictEqual(await readAll(src!, how, chunk), weights, "the true bytes");
        ok(s.served.length > before, "read from the network");
        strictEqual(await storage.meta(key), undefined, "the entry was dropped");
        // The next open fetches it again, and the one after reads the store alone.
        const sent = s.bytesSent("weights.bin");
        await store(storage, o).files(s.base).prepare!(["weights.bin"]);
        strictEqual(s.bytesSent("weights.bin") - sent, SIZE, "fetched again");
        deepStrictEqual((await storage.meta(key))?.chunks, recorded);
        const again = store(storage, o).files(s.base);
        const w = await again.open("weights.bin");
        await again.prepare!(["weights.bin"]);
        const quiet = s.served.length;
        deepStrictEqual(await readAll(w!, how, chunk), weights);
        strictEqual(s.served.length, quiet, "no request");
      });
    });
  }

  Deno.test(`checked store (${kind}): with the network gone too, the read says why`, async () => {
    const storage = await make();
    await withServer({}, async (s) => {
      const net = network();
      const o = { hashChunkBytes: PARTIAL, fetch: net.fetch };
      const key = entryKey(`${s.base}weights.bin`);
      await store(storage, o).files(s.base).prepare!(["weights.bin"]);
      await flip(storage, key, 4 * PARTIAL + 1);
      const files = store(storage, o).files(s.base);
      const src = await files.open("weights.bin");
      await files.prepare!(["weights.bin"]);
      net.offline = true;
      await rejects(readAll(src!, "cut chunks", PARTIAL), (e: EngineError) => {
        strictEqual(e.name, "EngineError");
        strictEqual(e.type, "CannotConnect");
        ok(
          e.message.startsWith(
            `the model store's copy of ${s.base}weights.bin was corrupt (chunk 5 of 11 did not ` +
              "match the hash recorded when it was stored) and was dropped; reading it from " +
              "the network failed too: ",
          ),
          e.message,
        );
        ok(e.message.includes("network is unreachable"), e.message);
        return true;
      });
      strictEqual(await storage.meta(key), undefined, "the entry was dropped");
    });
  });
}

Deno.test("checked store: a download resumed after a cut records the whole file's hashes", async () => {
  const storage = new MemoryStorage();
  const at = 5 * PARTIAL + 1234;
  await withServer({ etag: "version", cut: [{ path: "weights.bin", at }] }, async (s) => {
    const o = { hashChunkBytes: PARTIAL };
    const key = entryKey(`${s.base}weights.bin`);
    await rejects(store(storage, o).files(s.base).prepare!(["weights.bin"]));
    const stored = await storage.length(key);
    ok(stored > PARTIAL && stored <= at, `${stored} bytes stored`);
    await store(storage, o).files(s.base).prepare!(["weights.bin"]);
    ok(s.ranges.some((r) => r.startsWith(`bytes=${stored}-`)), "resumed");
    deepStrictEqual((await storage.meta(key))?.chunks, chunksOf(weights, PARTIAL));
  });
});

Deno.test("checked store: a server whose file changed cannot stand in; the read says so", async () => {
  const storage = new MemoryStorage();
  // The file changes once the download's 16 Range GETs are done.
  await withServer(
    { etag: "version", change: { path: "weights.bin", afterGets: 16 } },
    async (s) => {
      const o = { hashChunkBytes: PARTIAL };
      const key = entryKey(`${s.base}weights.bin`);
      await store(storage, o).files(s.base).prepare!(["weights.bin"]);
      strictEqual(s.gets("weights.bin"), 16);
      await flip(storage, key, 2 * PARTIAL);
      const files = store(storage, o).files(s.base);
      const src = await files.open("weights.bin");
      await files.prepare!(["weights.bin"]);
      await rejects(src!.read(0, SIZE), (e: EngineError) => {
        ok(e.message.includes("(chunk 3 of 11 did not match"), e.message);
        ok(e.message.includes("the server's file differs: chunk 1 of 11 did not match"), e.message);
        return true;
      });
      strictEqual(await storage.meta(key), undefined);
    },
  );
});

Deno.test("checked store: an older entry without chunk hashes gets them on its first open", async () => {
  const storage = new MemoryStorage();
  await withServer({ etag: "version" }, async (s) => {
    const o = { hashChunkBytes: PARTIAL };
    const key = entryKey(`${s.base}weights.bin`);
    await store(storage, o).files(s.base).prepare!(["weights.bin"]);
    const meta = (await storage.meta(key))!;
    const recorded = meta.chunks;
    delete meta.chunks;
    await storage.setMeta(key, meta);
    const files = store(storage, o).files(s.base);
    const quiet = s.served.length;
    const src = await files.open("weights.bin");
    await files.prepare!(["weights.bin"]);
    deepStrictEqual((await storage.meta(key))?.chunks, recorded, "recorded on open");
    deepStrictEqual(await src!.read(0, SIZE), weights);
    strictEqual(s.served.length, quiet, "no request");
    // From then on a flipped byte is caught as in any other entry.
    await flip(storage, key, 7 * PARTIAL + 3);
    const again = store(storage, o).files(s.base);
    const w = await again.open("weights.bin");
    await again.prepare!(["weights.bin"]);
    deepStrictEqual(await w!.read(0, SIZE), weights);
    strictEqual(await storage.meta(key), undefined);
  });
});

Deno.test("checked store: an older entry whose SHA-256 is known is checked by it first", async () => {
  const storage = new MemoryStorage();
  await withServer({ linkedSha: true, etag: "version" }, async (s) => {
    const key = entryKey(`${s.base}weights.bin`);
    await store(storage).files(s.base).prepare!(["weights.bin"]);
    const meta = (await storage.meta(key))!;
    ok(meta.sha256 !== undefined && meta.chunks !== undefined);
    delete meta.chunks;
    await storage.setMeta(key, meta);
    await flip(storage, key, SIZE / 2);
    const sent = s.bytesSent("weights.bin");
    const files = store(storage).files(s.base);
    await files.prepare!(["weights.bin"]);
    strictEqual(s.bytesSent("weights.bin") - sent, SIZE, "dropped on open, fetched again");
    ok((await storage.meta(key))?.chunks !== undefined);
    deepStrictEqual(storage.bytes.get(key), weights);
  });
});

/** A source over `bytes` that counts what it reads (`readInto` where `into` is set). */
function counting(bytes: Uint8Array, withReadInto: boolean) {
  const count = { bytes: 0 };
  const src: ByteSource = {
    name: "counted",
    size: bytes.length,
    read(offset, length) {
      count.bytes += Math.max(0, Math.min(length, bytes.length - offset));
      return Promise.resolve(bytes.slice(offset, offset + length));
    },
    ...(withReadInto
      ? {
        readInto(offset: number, into: Uint8Array) {
          count.bytes += into.length;
          into.set(bytes.subarray(offset, offset + into.length));
          return Promise.resolve();
        },
      }
      : {}),
  };
  return { src, count };
}

function chunksOf(bytes: Uint8Array, chunk: number) {
  const h = new ChunkHasher(chunk);
  h.update(bytes);
  return { bytes: chunk, xxh32: h.finish() };
}

for (const withReadInto of [true, false]) {
  Deno.test(`ChunkCheck (readInto ${withReadInto}): a first pass reads each byte once`, async () => {
    const { src, count } = counting(weights, withReadInto);
    const checked = new ChunkCheck(src, chunksOf(weights, PARTIAL));
    // The upload's pattern: pieces that start and end inside chunks, in order.
    deepStrictEqual(await readAll(checked, "cut chunks", PARTIAL), weights);
    strictEqual(count.bytes, SIZE, "the first pass read each byte once");
    const out = new Uint8Array(SIZE);
    for (let at = 0; at < SIZE; at += 150_001) {
      await checked.readInto(at, out.subarray(at, Math.min(SIZE, at + 150_001)));
    }
    deepStrictEqual(out, weights);
    strictEqual(count.bytes, 2 * SIZE, "two passes, each byte read once per pass");
  });
}

Deno.test("ChunkCheck: concurrent reads anywhere get the true bytes; a bad chunk throws", async () => {
  const { src } = counting(weights, true);
  const checked = new ChunkCheck(src, chunksOf(weights, PARTIAL));
  const spans = Array.from(
    { length: 40 },
    (_, i) => [(i * 77_777) % SIZE, 1 + (i * 31_337) % 90_000],
  );
  const got = await Promise.all(spans.map(([at, n]) => checked.read(at!, n!)));
  spans.forEach(([at, n], i) => deepStrictEqual(got[i], weights.slice(at!, at! + n!)));
  const bad = weights.slice();
  bad[3 * PARTIAL + 10] = bad[3 * PARTIAL + 10]! ^ 1;
  const wrong = new ChunkCheck(counting(bad, true).src, chunksOf(weights, PARTIAL));
  deepStrictEqual(await wrong.read(0, 3 * PARTIAL), weights.subarray(0, 3 * PARTIAL));
  await rejects(wrong.read(3 * PARTIAL + 5, 2), /chunk 4 of 11/);
  await rejects(wrong.readInto(2 * PARTIAL, new Uint8Array(4 * PARTIAL)), /chunk 4 of 11/);
});
