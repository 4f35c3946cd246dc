/**
 * A resumable download of one file into a store entry: Range requests of `chunkBytes` each,
 * every body streamed into the entry's writer (never the whole file in memory), starting from
 * the bytes already stored when the sidecar says they are of the same file (same size and
 * validator). Dropped connections and 5xx/429 answers are retried with exponential backoff
 * (waiting for `online` where the runtime has it), counting only failures that made no progress.
 * Every answer's ETag is checked against the one the bytes were fetched under (and `If-Range`
 * asks the server to do the same, where it adds no CORS preflight): a file that changed
 * between two Ranges is fetched again from zero, never mixed. A server that ignores Range
 * (200) is read whole from zero. Integrity: the size always; the SHA-256 where the server gave
 * one, hashed as the bytes arrive (the stored prefix rehashed on resume); a mismatch deletes the
 * entry and fetches it once more, then is an `InvalidArgument`. The entry is marked complete
 * only once verified, and its sidecar then records the XXH32 of each 4 MiB chunk
 * (`EntryMeta.chunks`), hashed as the bytes are written (on resume, over the stored prefix
 * first), which every later read checks (`checked.ts`).
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { EngineError } from "../contract/errors.ts";
import { htmlPage, isHtmlType } from "../formats/html.ts";
import {
  describeRemote,
  drop,
  lengthOf,
  rangeOf,
  type Remote,
  Retryable,
  send,
  statusError,
  validatorOf,
} from "./remote.ts";
import { type EntryMeta, type EntryStorage, HASH_CHUNK_BYTES } from "./storage.ts";
import { ChunkHasher } from "./xxh32.ts";

/** How a download runs. */
export interface DownloadOptions {
  /** The `fetch` to use. */
  fetch: typeof fetch;
  /** Bytes per Range request. */
  chunkBytes: number;
  /** Failures in a row (without progress) before giving up. */
  retries: number;
  /** The first retry's wait, doubled each time up to 30 s (default 500 ms). */
  backoffMs?: number;
  /** Bytes per hashed chunk recorded in the sidecar (default `HASH_CHUNK_BYTES`, 4 MiB). */
  hashChunkBytes?: number;
  /**
   * Bytes now present: called as bytes are stored (after a restart from zero, with fewer than
   * before).
   */
  onLoaded?: (loaded: number, total: number) => void;
}

/** Which file, and of which model. */
export interface EntryName {
  /** The file's URL. */
  url: string;
  /** The model's base URL. */
  base: string;
  /** The file's name in the model. */
  name: string;
}

/** The file changed on the server while it was being read. */
class Changed extends Error {}
/** The bytes' SHA-256 is not the one the server gave. */
class Mismatch extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Wait `ms`, and then, where the runtime knows it is offline, until it is online (≤ 60 s). */
async function pause(ms: number): Promise<void> {
  await sleep(ms);
  const nav = (globalThis as { navigator?: { onLine?: boolean } }).navigator;
  if (nav?.onLine !== false || typeof globalThis.addEventListener !== "function") return;
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      globalThis.removeEventListener("online", done);
      resolve();
    };
    const timer = setTimeout(done, 60_000);
    globalThis.addEventListener("online", done);
  });
}

/** Whether a header `If-Range` would add a CORS preflight (a cross-origin page request). */
function crossOrigin(url: string): boolean {
  const here = (globalThis as { location?: { origin?: string } }).location?.origin;
  return here !== undefined && new URL(url).origin !== here;
}

/**
 * Download `entry.url` into `key` of `storage` (or finish what an earlier try left) and verify
 * it. Returns the complete sidecar, or one with `absent` set when the server has no such file.
 */
export async function download(
  storage: EntryStorage,
  key: string,
  entry: EntryName,
  options: DownloadOptions,
): Promise<EntryMeta> {
  let changes = 0, refetched = false;
  for (;;) {
    try {
      return await attempt(storage, key, entry, options);
    } catch (e) {
      if (e instanceof Changed) {
        if (++changes > 3) {
          throw new EngineError("CannotConnect", `${entry.url}: the file kept changing`);
        }
        continue;
      }
      if (!(e instanceof Mismatch)) throw e;
      await storage.delete(key);
      if (refetched) throw EngineError.invalidArgument(e.message);
      refetched = true;
    }
  }
}

async function attempt(
  storage: EntryStorage,
  key: string,
  entry: EntryName,
  options: DownloadOptions,
): Promise<EntryMeta> {
  const { url } = entry;
  let failures = 0;
  const fail = async (e: unknown) => {
    if (!(e instanceof Retryable)) throw e;
    if (++failures > options.retries) throw e.error;
    await pause(Math.min(30_000, (options.backoffMs ?? 500) * 2 ** (failures - 1)));
  };
  let remote: Remote | "missing" | "html" | undefined;
  while (remote === undefined) {
    try {
      remote = await describeRemote(options.fetch, url);
    } catch (e) {
      await fail(e);
    }
  }
  const now = Date.now();
  if (typeof remote === "string") {
    const meta: EntryMeta = { ...entry, size: 0, complete: true, absent: remote, updated: now };
    await storage.setMeta(key, meta);
    return meta;
  }
  const { size, validator, sha256: expected } = remote;
  const old = await storage.meta(key);
  let from = await storage.length(key);
  if (old?.size !== size || old.validator !== validator || from > size) from = 0;
  const meta: EntryMeta = {
    ...entry,
    size,
    ...(validator === undefined ? {} : { validator }),
    ...(expected === undefined ? {} : { sha256: expected }),
    complete: false,
    updated: now,
  };
  await storage.setMeta(key, meta);
  let hash = expected === undefined ? undefined : sha256.create();
  const chunkBytes = options.hashChunkBytes ?? HASH_CHUNK_BYTES;
  let chunks = new ChunkHasher(chunkBytes);
  if (from > 0) {
    const stored = await storage.source(key, url);
    for (let at = 0; at < from; at += options.chunkBytes) {
      const piece = await stored!.read(at, Math.min(options.chunkBytes, from - at));
      hash?.update(piece);
      chunks.update(piece);
    }
  }
  options.onLoaded?.(from, size);
  const ifRange = validator?.startsWith('"') && !crossOrigin(url) ? { "if-range": validator } : {};
  let best = from;
  while (from < size) {
    const end = Math.min(from + options.chunkBytes, size) - 1;
    let res: Response;
    try {
      res = await send(options.fetch, url, {
        headers: { range: `bytes=${from}-${end}`, ...ifRange },
      });
    } catch (e) {
      await fail(e);
      continue;
    }
    if (isHtmlType(res.headers)) {
      await drop(res);
      throw htmlPage(url);
    }
    if (res.status !== 200 && res.status !== 206) {
      await drop(res);
      await fail(statusError(url, res));
      continue;
    }
    const tag = validatorOf(res.headers);
    if (validator !== undefined && tag !== undefined && tag !== validator) {
      await drop(res);
      throw new Changed();
    }
    let want: number;
    if (res.status === 206) {
      const r = rangeOf(res.headers);
      if (r?.total !== undefined && r.total !== size) {
        await drop(res);
        if (tag !== undefined) throw new Changed();
        throw EngineError.invalidArgument(
          `${url}: the server gave the size as ${size}, then as ${r.total}`,
        );
      }
      if (r === undefined || r.start !== from || r.end > end) {
        await drop(res);
        throw new EngineError(
          "CannotConnect",
          `${url}: asked for bytes ${from}-${end}, got ${res.headers.get("content-range")}`,
        );
      }
      want = r.end - r.start + 1;
    } else {
      // The server ignores Range: this body is the whole file, so start again from zero.
      if (from > 0) {
        from = 0;
        hash = expected === undefined ? undefined : sha256.create();
        chunks = new ChunkHasher(chunkBytes);
        options.onLoaded?.(0, size);
      }
      want = size;
    }
    const length = lengthOf(res.headers);
    if (length !== undefined && length !== want) {
      await drop(res);
      throw EngineError.invalidArgument(
        `${url}: Content-Length ${length} for ${want} bytes (${
          res.status === 206 ? res.headers.get("content-range") : "the whole file"
        })`,
      );
    }
    const got = await store(storage, key, from, want, res, [hash, chunks], (n) => {
      options.onLoaded?.(from + n, size);
    });
    from += got.bytes;
    if (from > best) {
      best = from;
      failures = 0;
    }
    if (got.error !== undefined) {
      await fail(new Retryable(new EngineError("CannotConnect", `${url}: ${got.error}`)));
      continue;
    }
    if (got.bytes !== want) {
      throw EngineError.invalidArgument(`${url}: the server sent ${got.bytes} of ${want} bytes`);
    }
  }
  const stored = await storage.length(key);
  if (stored !== size) {
    // Every byte was written, yet the storage kept fewer: what it holds cannot be trusted (nor
    // resumed from), so the entry goes. Seen in Chromium's off-the-record (private window)
    // OPFS, kept in memory, which dropped sync-access-handle writes past about 1.5 GB.
    await storage.delete(key);
    throw new EngineError(
      "ResourceExhausted",
      `${url}: the model store (${storage.kind}) kept ${stored} of the ${size} bytes written; the entry was deleted`,
    );
  }
  if (hash) {
    const got = [...hash.digest()].map((b) => b.toString(16).padStart(2, "0")).join("");
    if (got !== expected) {
      throw new Mismatch(`${url}: SHA-256 mismatch: expected ${expected}, got ${got}`);
    }
  }
  const done: EntryMeta = {
    ...meta,
    complete: true,
    chunks: { bytes: chunkBytes, xxh32: chunks.finish() },
    updated: Date.now(),
  };
  await storage.setMeta(key, done);
  return done;
}

/**
 * Stream `res`'s body into the entry from `from`, hashing it with each of `hashes`: at most
 * `want` bytes (more is an `InvalidArgument`). Returns the bytes stored and, if the body broke,
 * why.
 */
async function store(
  storage: EntryStorage,
  key: string,
  from: number,
  want: number,
  res: Response,
  hashes: ({ update(bytes: Uint8Array): unknown } | undefined)[],
  onBytes: (n: number) => void,
): Promise<{ bytes: number; error?: string }> {
  const writer = await storage.writer(key, from);
  let bytes = 0;
  const reader = bodyReader(res.body!);
  try {
    for (;;) {
      const value = await reader.next();
      if (value === undefined) return { bytes };
      if (bytes + value.length > want) {
        await reader.cancel().catch(() => {});
        throw EngineError.invalidArgument(
          `${res.url || "the server"}: sent more than the ${want} bytes it announced`,
        );
      }
      try {
        await writer.write(value);
      } catch (e) {
        throw writeError(key, e, from + bytes, res.url);
      }
      for (const h of hashes) h?.update(value);
      bytes += value.length;
      onBytes(bytes);
    }
  } catch (e) {
    if (e instanceof EngineError) throw e;
    return { bytes, error: (e as Error).message };
  } finally {
    await writer.close();
  }
}

/** Bytes of the buffer a body is read into, where it is a byte stream. */
const PIECE_BYTES = 1 << 20;

/**
 * A body's bytes piece by piece. Where the body is a byte stream (fetch in Chromium and Deno),
 * each piece is read into one reused buffer (a BYOB reader), valid until the next call: a
 * download of gigabytes then leaves no garbage of network chunks behind it (writers copy or
 * store the bytes before their `write` settles). Else the stream's own chunks.
 */
function bodyReader(body: ReadableStream<Uint8Array>) {
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    byob = undefined; // not a byte stream
  }
  const plain = byob ? undefined : body.getReader();
  let buffer = new ArrayBuffer(PIECE_BYTES);
  return {
    async next(): Promise<Uint8Array | undefined> {
      if (plain) {
        const { done, value } = await plain.read();
        return done ? undefined : value;
      }
      const { done, value } = await byob!.read(new Uint8Array(buffer));
      if (done || value === undefined) return undefined;
      buffer = value.buffer as ArrayBuffer;
      return value;
    },
    cancel: () => (byob ?? plain)!.cancel(),
  };
}

/**
 * A backend's write failure at byte `at`: `ResourceExhausted` when the storage is full (a quota
 * the browser enforces on writes, whatever `estimate()` said before), naming the byte.
 */
function writeError(key: string, e: unknown, at: number, url: string): EngineError {
  const name = (e as Error)?.name;
  const full = name === "QuotaExceededError" || /no space/i.test((e as Error)?.message ?? "");
  const what = url || `model store entry ${key}`;
  return new EngineError(
    full ? "ResourceExhausted" : "Unknown",
    full
      ? `${what}: the model store is full after ${at} bytes (${(e as Error)?.message ?? e})`
      : `${what}: writing at byte ${at} of the model store entry: ${(e as Error)?.message ?? e}`,
    { cause: e },
  );
}
