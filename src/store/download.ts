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
import { storeBody } from "./write_body.ts";
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

/** One try of a download; `Changed` or `Mismatch` where `download` should try again. */
async function attempt(
  storage: EntryStorage,
  key: string,
  entry: EntryName,
  options: DownloadOptions,
): Promise<EntryMeta> {
  const { url } = entry;
  const retry = retries(options);
  const remote = await remoteOf(options.fetch, url, retry);
  const now = Date.now();
  if (typeof remote === "string") {
    const meta: EntryMeta = { ...entry, size: 0, complete: true, absent: remote, updated: now };
    await storage.setMeta(key, meta);
    return meta;
  }
  const { size, validator, sha256: expected } = remote;
  let from = await resumeFrom(storage, key, size, validator);
  const meta: EntryMeta = {
    ...entry,
    size,
    ...(validator === undefined ? {} : { validator }),
    ...(expected === undefined ? {} : { sha256: expected }),
    complete: false,
    updated: now,
  };
  await storage.setMeta(key, meta);
  const chunkBytes = options.hashChunkBytes ?? HASH_CHUNK_BYTES;
  let hashes = freshHashes(expected, chunkBytes);
  await rehash(storage, key, url, from, options.chunkBytes, hashes);
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
      await retry.fail(e);
      continue;
    }
    if (!await usable(res, url, validator, retry)) continue;
    let want = size;
    if (res.status === 206) want = await partLength(res, url, from, end, size);
    else if (from > 0) {
      // The server ignores Range: this body is the whole file, so start again from zero.
      from = 0;
      hashes = freshHashes(expected, chunkBytes);
      options.onLoaded?.(0, size);
    }
    await checkLength(res, url, want);
    const got = await storeBody(storage, key, from, want, res, [hashes.sha, hashes.chunks], (n) => {
      options.onLoaded?.(from + n, size);
    });
    from += got.bytes;
    if (from > best) {
      best = from;
      retry.progressed();
    }
    if (got.error !== undefined) {
      await retry.fail(new Retryable(new EngineError("CannotConnect", `${url}: ${got.error}`)));
      continue;
    }
    if (got.bytes !== want) {
      throw EngineError.invalidArgument(`${url}: the server sent ${got.bytes} of ${want} bytes`);
    }
  }
  return await complete(storage, key, meta, hashes, chunkBytes);
}

/** How one attempt retries: failures in a row without progress, each waited out longer. */
interface Retry {
  /** Rethrow `e` unless it is `Retryable` with retries left; else wait (backing off). */
  fail(e: unknown): Promise<void>;
  /** Bytes were gained: the failures in a row count from zero again. */
  progressed(): void;
}

/** The retries of one attempt, as `options` set them. */
function retries(options: DownloadOptions): Retry {
  let failures = 0;
  return {
    fail: async (e: unknown) => {
      if (!(e instanceof Retryable)) throw e;
      if (++failures > options.retries) throw e.error;
      await pause(Math.min(30_000, (options.backoffMs ?? 500) * 2 ** (failures - 1)));
    },
    progressed: () => {
      failures = 0;
    },
  };
}

/** What the server says of `url`: asked again after each retryable failure. */
async function remoteOf(
  fetchFn: typeof fetch,
  url: string,
  retry: Retry,
): Promise<Remote | "missing" | "html"> {
  let remote: Remote | "missing" | "html" | undefined;
  while (remote === undefined) {
    try {
      remote = await describeRemote(fetchFn, url);
    } catch (e) {
      await retry.fail(e);
    }
  }
  return remote;
}

/** The hashes of an entry's bytes: the SHA-256 where one is expected, and each chunk's XXH32. */
interface Hashes {
  sha: ReturnType<typeof sha256.create> | undefined;
  chunks: ChunkHasher;
}

/** Hashes of no bytes yet. */
function freshHashes(expected: string | undefined, chunkBytes: number): Hashes {
  return {
    sha: expected === undefined ? undefined : sha256.create(),
    chunks: new ChunkHasher(chunkBytes),
  };
}

/** The bytes of `key` to resume from: those stored of this same file (size, validator), or 0. */
async function resumeFrom(
  storage: EntryStorage,
  key: string,
  size: number,
  validator: string | undefined,
): Promise<number> {
  const old = await storage.meta(key);
  const from = await storage.length(key);
  return old?.size !== size || old.validator !== validator || from > size ? 0 : from;
}

/** Hash the first `from` bytes stored in `key` into `hashes`, `step` bytes at a time. */
async function rehash(
  storage: EntryStorage,
  key: string,
  url: string,
  from: number,
  step: number,
  hashes: Hashes,
): Promise<void> {
  if (!(from > 0)) return;
  const stored = await storage.source(key, url);
  for (let at = 0; at < from; at += step) {
    const piece = await stored!.read(at, Math.min(step, from - at));
    hashes.sha?.update(piece);
    hashes.chunks.update(piece);
  }
}

/**
 * Whether `res` may be read: an HTML page throws, another status than 200 or 206 is a failure
 * to retry (false, once waited out), and a validator other than the bytes' is `Changed`.
 */
async function usable(
  res: Response,
  url: string,
  validator: string | undefined,
  retry: Retry,
): Promise<boolean> {
  if (isHtmlType(res.headers)) {
    await drop(res);
    throw htmlPage(url);
  }
  if (res.status !== 200 && res.status !== 206) {
    await drop(res);
    await retry.fail(statusError(url, res));
    return false;
  }
  const tag = validatorOf(res.headers);
  if (validator !== undefined && tag !== undefined && tag !== validator) {
    await drop(res);
    throw new Changed();
  }
  return true;
}

/** The bytes a 206 answer to `bytes=from-end` of a `size`-byte file holds, once checked. */
async function partLength(
  res: Response,
  url: string,
  from: number,
  end: number,
  size: number,
): Promise<number> {
  const r = rangeOf(res.headers);
  if (r?.total !== undefined && r.total !== size) {
    await drop(res);
    if (validatorOf(res.headers) !== undefined) throw new Changed();
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
  return r.end - r.start + 1;
}

/** `InvalidArgument` where `res`'s Content-Length is not the `want` bytes it should hold. */
async function checkLength(res: Response, url: string, want: number): Promise<void> {
  const length = lengthOf(res.headers);
  if (length !== undefined && length !== want) {
    await drop(res);
    throw EngineError.invalidArgument(
      `${url}: Content-Length ${length} for ${want} bytes (${
        res.status === 206 ? res.headers.get("content-range") : "the whole file"
      })`,
    );
  }
}

/**
 * Check the entry `meta` describes now that every byte is written (its length, and its SHA-256
 * where known), then mark it complete with its chunk hashes: the sidecar.
 */
async function complete(
  storage: EntryStorage,
  key: string,
  meta: EntryMeta,
  hashes: Hashes,
  chunkBytes: number,
): Promise<EntryMeta> {
  const { url, size, sha256: expected } = meta;
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
  if (hashes.sha) {
    const got = [...hashes.sha.digest()].map((b) => b.toString(16).padStart(2, "0")).join("");
    if (got !== expected) {
      throw new Mismatch(`${url}: SHA-256 mismatch: expected ${expected}, got ${got}`);
    }
  }
  const done: EntryMeta = {
    ...meta,
    complete: true,
    chunks: { bytes: chunkBytes, xxh32: hashes.chunks.finish() },
    updated: Date.now(),
  };
  await storage.setMeta(key, done);
  return done;
}
