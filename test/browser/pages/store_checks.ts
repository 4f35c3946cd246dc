/**
 * The model store's checks on one backend, in a page or a worker: a download cut at 40% keeps
 * its bytes, a new store resumes it from there (asking `Range: bytes=<stored>-`) and verifies it
 * (SHA-256 given as HF gives it, `x-linked-etag`), a reload reads it with no request, a truncated
 * or flipped entry is fetched again, a byte flipped at rest in an entry stored with no SHA-256
 * is caught by its chunk hash as the default store reads it (the load getting the true bytes from
 * the network, the entry dropped and fetched again), a quota too small is refused naming the
 * bytes.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { EngineError } from "../../../src/contract/errors.ts";
import { readInto } from "../../../src/formats/source.ts";
import { entryKey, type EntryStorage } from "../../../src/store/storage.ts";
import { ModelStore, type ModelStoreOptions } from "../../../src/store/store.ts";

export type Check = readonly [string, () => Promise<string | void>];

const BASE = new URL("/models/fortune/", location.href).href;
const FILE = "model.safetensors";
const URL_ = `${BASE}${FILE}`;

function assert(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(message);
}

const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");

/** Requests made through a store's `fetch`, with their Range headers and body bytes. */
interface Log {
  calls: { url: string; method: string; range: string | null }[];
  bytes: number;
}

/**
 * `fetch` that logs, gives the weights' SHA-256 as `x-linked-etag` (unless `sha` is undefined),
 * and (when `cutAt` is set) breaks the first body that reaches byte `cutAt` of the weights there.
 */
function faulty(log: Log, sha: string | undefined, cutAt?: number): typeof fetch {
  let cut = cutAt !== undefined;
  return async (input, init) => {
    const url = String(input);
    const headers = new Headers(init?.headers);
    log.calls.push({ url, method: init?.method ?? "GET", range: headers.get("range") });
    const res = await fetch(input, init);
    if (url !== URL_) return res;
    const h = new Headers(res.headers);
    if (sha !== undefined) h.set("x-linked-etag", `"${sha}"`);
    const from = Number(/^bytes (\d+)-/.exec(res.headers.get("content-range") ?? "")?.[1] ?? 0);
    let at = from;
    const reader = res.body?.getReader();
    const body = reader && new ReadableStream<Uint8Array>({
      async pull(c) {
        const { done, value } = await reader.read();
        if (done) return c.close();
        if (cut && at + value.length >= cutAt!) {
          cut = false;
          c.enqueue(value.subarray(0, cutAt! - at));
          log.bytes += cutAt! - at;
          await reader.cancel();
          return c.error(new TypeError("network error (cut by the test)"));
        }
        at += value.length;
        log.bytes += value.length;
        c.enqueue(value);
      },
    });
    return new Response(body ?? null, {
      status: res.status,
      statusText: res.statusText,
      headers: h,
    });
  };
}

export async function storeChecks(label: string, storage: EntryStorage): Promise<Check[]> {
  const whole = new Uint8Array(await (await fetch(URL_)).arrayBuffer());
  const sha = hex(sha256(whole));
  const size = whole.length;
  const key = entryKey(URL_);
  const store = (log: Log, o: ModelStoreOptions = {}, cutAt?: number, given: boolean = true) =>
    new ModelStore(storage, {
      fetch: faulty(log, given ? sha : undefined, cutAt),
      chunkBytes: 1 << 20,
      backoffMs: 1,
      ...o,
    });
  const newLog = (): Log => ({ calls: [], bytes: 0 });
  const same = async (what: string) => {
    const src = await storage.source(key, FILE);
    assert(src?.size === size, `${what}: ${src?.size} bytes stored of ${size}`);
    const got = await src.read(0, size);
    assert(hex(sha256(got)) === sha, `${what}: stored bytes differ from the file`);
  };
  let stored = 0;
  return [
    [`${label}: a download cut at 40% keeps its bytes and is not complete`, async () => {
      await storage.delete(key);
      const log = newLog();
      const files = store(log, { retries: 0 }, Math.floor(size * 0.4)).files(BASE);
      const err = await files.prepare!([FILE]).then(() => undefined, (e) => e);
      assert(err instanceof EngineError && err.type === "CannotConnect", `got ${err}`);
      stored = await storage.length(key);
      assert(stored > 0 && stored <= size * 0.4, `stored ${stored}`);
      assert((await storage.meta(key))?.complete === false, "marked complete");
      return `${stored} of ${size} bytes stored`;
    }],
    [`${label}: a new store resumes from the stored bytes and verifies`, async () => {
      const log = newLog();
      await store(log).files(BASE).prepare!([FILE]);
      const first = log.calls.find((c) => c.url === URL_ && c.range !== null);
      assert(first?.range?.startsWith(`bytes=${stored}-`), `first Range ${first?.range}`);
      assert((await storage.meta(key))?.complete === true, "not complete");
      await same("resumed");
      return `${log.bytes} bytes fetched to finish`;
    }],
    [`${label}: a reload reads everything with no request`, async () => {
      const log = newLog();
      const files = store(log).files(BASE);
      const config = await files.open("config.json");
      const text = new TextDecoder().decode(await config!.read(0, config!.size));
      JSON.parse(text);
      const log2 = newLog();
      const again = store(log2).files(BASE);
      const c2 = await again.open("config.json");
      const w = await again.open(FILE);
      await again.prepare!([FILE]);
      const bytes = await w!.read(0, size);
      assert(hex(sha256(bytes)) === sha, "reload read other bytes");
      assert(await c2!.read(0, c2!.size).then((b) => new TextDecoder().decode(b)) === text, "cfg");
      assert(log2.calls.length === 0, `requests: ${JSON.stringify(log2.calls)}`);
    }],
    [`${label}: a truncated entry is fetched again, never served`, async () => {
      const w = await storage.writer(key, size - 1000);
      await w.close();
      const log = newLog();
      const files = store(log).files(BASE);
      const src = await files.open(FILE);
      assert(src?.size === size, `opened ${src?.size}`);
      await files.prepare!([FILE]);
      assert(log.bytes >= size, `refetched ${log.bytes}`);
      await same("refetched");
    }],
    [`${label}: a flipped byte is caught by the hash and fetched again`, async () => {
      const w = await storage.writer(key, size - 1);
      await w.write(new Uint8Array([whole[size - 1]! ^ 0xff]));
      await w.close();
      const log = newLog();
      await store(log, { verify: "sha256" }).files(BASE).prepare!([FILE]);
      assert(log.bytes >= size, `refetched ${log.bytes}`);
      await same("refetched");
    }],
    [`${label}: a byte flipped at rest is caught on read by default, with no SHA-256`, async () => {
      await storage.delete(key);
      await store(newLog(), {}, undefined, false).files(BASE).prepare!([FILE]);
      const meta = await storage.meta(key);
      assert(meta?.complete && meta.sha256 === undefined, `stored ${JSON.stringify(meta)}`);
      const chunks = meta.chunks?.xxh32.length ?? 0;
      assert(chunks / 8 === Math.ceil(size / (4 << 20)), `${chunks / 8} chunk hashes`);
      // Flip a byte in the middle of the second chunk (as a disk might).
      const at = (4 << 20) + 123_457;
      const rest = await (await storage.source(key, FILE))!.read(at, size - at);
      rest[0] = rest[0]! ^ 0x20;
      const w = await storage.writer(key, at);
      await w.write(rest);
      await w.close();
      const log = newLog();
      const files = store(log, {}, undefined, false).files(BASE);
      const src = await files.open(FILE);
      await files.prepare!([FILE]);
      assert(log.bytes === 0, `downloaded ${log.bytes} bytes before reading`);
      // As the upload reads: 8 MiB pieces from an offset inside a chunk.
      const got = new Uint8Array(size);
      got.set(await src!.read(0, 1000));
      for (let from = 1000; from < size; from += 8 << 20) {
        await readInto(src!, from, got.subarray(from, Math.min(size, from + (8 << 20))));
      }
      src!.release?.();
      assert(hex(sha256(got)) === sha, "the bytes read are not the file's");
      const ranges = log.calls.filter((c) => c.url === URL_ && c.range !== null);
      assert(ranges.length > 0 && log.bytes > 0, `no network read: ${JSON.stringify(log.calls)}`);
      assert(log.bytes <= size, `${log.bytes} bytes read from the network for ${size}`);
      assert(await storage.meta(key) === undefined, "the entry was not dropped");
      const again = newLog();
      await store(again, {}, undefined, false).files(BASE).prepare!([FILE]);
      assert(again.bytes >= size, `fetched again: ${again.bytes}`);
      await same("fetched again");
      return `${log.bytes} bytes read from the network, ${again.bytes} fetched again`;
    }],
    [`${label}: a quota too small is refused, naming the bytes`, async () => {
      await storage.delete(key);
      const log = newLog();
      const files = store(log, { estimate: () => Promise.resolve({ usage: 0, quota: 1000 }) })
        .files(BASE);
      const err = await files.prepare!([FILE]).then(() => undefined, (e) => e);
      assert(err instanceof EngineError && err.type === "ResourceExhausted", `got ${err}`);
      assert(err.message.includes(`needs ${size} more bytes; 1000 are available`), err.message);
      assert(!log.calls.some((c) => c.method === "GET" && c.url === URL_), "downloaded anyway");
    }],
  ];
}

/** Run `checks`, as `runChecks` records them. */
export async function runAll(
  checks: Check[],
): Promise<{ name: string; passed: boolean; message?: string }[]> {
  const out: { name: string; passed: boolean; message?: string }[] = [];
  for (const [name, fn] of checks) {
    try {
      const message = await fn();
      out.push({ name, passed: true, ...(message ? { message } : {}) });
    } catch (e) {
      out.push({
        name,
        passed: false,
        message: e instanceof Error ? e.stack ?? e.message : String(e),
      });
    }
  }
  return out;
}
