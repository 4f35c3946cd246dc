/**
 * The model store's check of the bytes it serves. A complete entry's sidecar records the XXH32
 * of each chunk of its content (`EntryMeta.chunks`, 4 MiB chunks; `xxh32.ts`), hashed as the
 * download wrote it. `ChunkCheck` hashes each chunk the first time any of its bytes are read and
 * compares: a read that covers whole chunks hashes them in the buffer it just filled (nothing is
 * read twice); a chunk it covers only in part is read whole into one of two chunk buffers,
 * checked there, and the part wanted copied out (the next read, which usually starts in that
 * chunk, copies the rest from there). Bytes are handed out only once their chunk matched;
 * checked chunks are read straight through from then on, and the buffers dropped by the first
 * read after every chunk is checked (or at `release()`).
 *
 * `storedEntry` serves a store entry so: at a mismatch the entry is dropped (the next open
 * fetches it again) and this read and every later one are served from the network instead,
 * checked against the same hashes, so that the load under way still gets the true bytes. Only
 * when that fails too is the read an `EngineError`, saying that the store's copy was corrupt
 * (which chunk) and was dropped, and why the network could not stand in.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { EngineError } from "../contract/errors.ts";
import { type ByteSource, readInto } from "../formats/source.ts";
import { openUrl } from "../formats/url_source.ts";
import type { EntryMeta, EntryStorage } from "./storage.ts";
import { ChunkHasher, hex8, Xxh32 } from "./xxh32.ts";

/** An entry's chunk hashes (`EntryMeta.chunks`). */
export type Chunks = NonNullable<EntryMeta["chunks"]>;

/** Whether `chunks` are hashes of `size` bytes (not a sidecar garbled or changed by hand). */
export function validChunks(chunks: EntryMeta["chunks"], size: number): chunks is Chunks {
  return chunks !== undefined && Number.isSafeInteger(chunks.bytes) && chunks.bytes > 0 &&
    typeof chunks.xxh32 === "string" &&
    chunks.xxh32.length === 8 * Math.ceil(size / chunks.bytes) && /^[0-9a-f]*$/.test(chunks.xxh32);
}

/** A chunk whose bytes do not hash to what was recorded. */
export class ChunkMismatch extends Error {
  /**
   * Chunk `index` (from 0) of `count`.
   *
   * @param index The chunk.
   * @param count Chunks in the file.
   */
  constructor(readonly index: number, readonly count: number) {
    super(`chunk ${index + 1} of ${count} did not match the hash recorded when it was stored`);
  }
}

/** A chunk buffer: chunk `index`'s bytes, checked (-1: none, or being read). */
interface Slot {
  index: number;
  bytes: Uint8Array;
}

/** Chunk buffers a `ChunkCheck` keeps (the edges of one read). */
const SLOTS = 2;

/**
 * `inner`'s bytes, each chunk checked against `chunks` the first time it is read (see the
 * module's notes); a read that meets a mismatch throws `ChunkMismatch`.
 */
export class ChunkCheck implements ByteSource {
  readonly name: string;
  readonly size: number;
  readonly #inner: ByteSource;
  readonly #bytes: number;
  readonly #hashes: string;
  readonly #count: number;
  /** 1 for each chunk checked. */
  readonly #ok: Uint8Array;
  /** Chunks not checked yet. */
  #left: number;
  /** Chunk buffers, the most recently used last. */
  #slots: Slot[] = [];
  /** Reads into the chunk buffers, one at a time. */
  #queue: Promise<unknown> = Promise.resolve();
  readonly #hash = new Xxh32();

  /**
   * `inner` checked against `chunks`.
   *
   * @param inner The bytes.
   * @param chunks The hashes they must have.
   */
  constructor(inner: ByteSource, chunks: Chunks) {
    this.name = inner.name;
    this.size = inner.size;
    this.#inner = inner;
    this.#bytes = chunks.bytes;
    this.#hashes = chunks.xxh32;
    this.#count = Math.ceil(inner.size / chunks.bytes);
    this.#ok = new Uint8Array(this.#count);
    this.#left = this.#count;
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    const n = Math.max(0, Math.min(length, this.size - offset));
    const done = this.#left === 0;
    if ((done && this.#slots.length === 0) || n === 0 || offset < 0) {
      return await this.#inner.read(offset, length);
    }
    if (this.#plain(offset, offset + n)) {
      // Every chunk it touches is checked, or covered whole: one read, hashed where it landed.
      const bytes = await this.#inner.read(offset, n);
      if (bytes.length !== n) {
        throw EngineError.invalidArgument(
          `${this.name}: read ${bytes.length} of ${n} bytes at ${offset} (truncated file?)`,
        );
      }
      this.#checkWhole(offset, bytes);
      return bytes;
    }
    const out = new Uint8Array(n);
    await this.#fill(offset, out, true);
    if (done) this.#slots = [];
    return out;
  }

  async readInto(offset: number, into: Uint8Array): Promise<void> {
    const done = this.#left === 0;
    if (done && this.#slots.length === 0) return await readInto(this.#inner, offset, into);
    if (offset < 0 || offset + into.length > this.size) {
      throw EngineError.invalidArgument(
        `${this.name}: read ${into.length} bytes at ${offset} of a ${this.size}-byte file`,
      );
    }
    await this.#fill(offset, into, false);
    // Every chunk was checked before this read, which had what it wanted of the buffers.
    if (done) this.#slots = [];
  }

  release(): void {
    this.#slots = [];
    this.#inner.release?.();
  }

  /** Where chunk `i` ends. */
  #end(i: number): number {
    return Math.min(this.size, (i + 1) * this.#bytes);
  }

  /** Whether [from, to) touches only checked chunks (none buffered) and ones it covers whole. */
  #plain(from: number, to: number): boolean {
    for (let i = Math.floor(from / this.#bytes); i * this.#bytes < to; i++) {
      const whole = i * this.#bytes >= from && this.#end(i) <= to;
      if (this.#slots.some((s) => s.index === i) || (!this.#ok[i] && !whole)) return false;
    }
    return true;
  }

  /** Check the chunks not checked yet that `bytes` (read from `offset`) hold whole. */
  #checkWhole(offset: number, bytes: Uint8Array): void {
    const to = offset + bytes.length;
    for (let i = Math.ceil(offset / this.#bytes); i < this.#count && this.#end(i) <= to; i++) {
      if (!this.#ok[i]) {
        this.#check(i, bytes.subarray(i * this.#bytes - offset, this.#end(i) - offset));
      }
    }
  }

  /** Compare chunk `i`'s `bytes` with its recorded hash. */
  #check(i: number, bytes: Uint8Array): void {
    const got = hex8(this.#hash.reset().update(bytes).digest());
    if (got !== this.#hashes.slice(8 * i, 8 * i + 8)) throw new ChunkMismatch(i, this.#count);
    if (this.#ok[i]) return;
    this.#ok[i] = 1;
    this.#left--;
  }

  /** Read [at, at + into.length) of the inner source into `into` (by `read` if `viaRead`). */
  async #direct(at: number, into: Uint8Array, viaRead: boolean): Promise<void> {
    const inner = this.#inner;
    const src = viaRead
      ? { name: inner.name, size: inner.size, read: inner.read.bind(inner) }
      : inner;
    await readInto(src, at, into);
  }

  /** Fill `into` with the bytes from `offset`, checking every chunk they touch. */
  async #fill(offset: number, into: Uint8Array, viaRead: boolean): Promise<void> {
    const end = offset + into.length, size = this.#bytes;
    for (let i = Math.floor(offset / size); i * size < end;) {
      const from = Math.max(offset, i * size), to = Math.min(end, this.#end(i));
      if (this.#copy(i, from, to, into, offset)) {
        i++;
        continue;
      }
      if (!this.#ok[i] && (from > i * size || to < this.#end(i))) {
        await this.#edge(i, from, to, into, offset, viaRead);
        i++;
        continue;
      }
      // A run of chunks read straight into `into`: checked ones, and ones it covers whole.
      let j = i;
      while (
        (j + 1) * size < end && !this.#slots.some((s) => s.index === j + 1) &&
        (this.#ok[j + 1] || this.#end(j + 1) <= end)
      ) j++;
      const runEnd = Math.min(end, this.#end(j));
      await this.#direct(from, into.subarray(from - offset, runEnd - offset), viaRead);
      this.#checkWhole(from, into.subarray(from - offset, runEnd - offset));
      i = j + 1;
    }
  }

  /** Copy [from, to) of chunk `i` into `into` (which starts at `offset`) if it is buffered. */
  #copy(i: number, from: number, to: number, into: Uint8Array, offset: number): boolean {
    const k = this.#slots.findIndex((s) => s.index === i);
    if (k < 0) return false;
    const slot = this.#slots[k]!;
    into.set(slot.bytes.subarray(from - i * this.#bytes, to - i * this.#bytes), from - offset);
    this.#slots.splice(k, 1);
    this.#slots.push(slot);
    return true;
  }

  /** Read chunk `i` whole into a buffer, check it, and copy [from, to) of it into `into`. */
  #edge(
    i: number,
    from: number,
    to: number,
    into: Uint8Array,
    offset: number,
    viaRead: boolean,
  ): Promise<void> {
    const run = this.#queue.then(async () => {
      if (this.#copy(i, from, to, into, offset)) return;
      let slot: Slot;
      if (this.#slots.length < SLOTS) {
        slot = { index: -1, bytes: new Uint8Array(Math.min(this.#bytes, this.size)) };
      } else {
        slot = this.#slots.shift()!;
        slot.index = -1;
      }
      this.#slots.push(slot);
      const bytes = slot.bytes.subarray(0, this.#end(i) - i * this.#bytes);
      await this.#direct(i * this.#bytes, bytes, viaRead);
      this.#check(i, bytes);
      slot.index = i;
      into.set(bytes.subarray(from - i * this.#bytes, to - i * this.#bytes), from - offset);
    });
    this.#queue = run.catch(() => {});
    return run;
  }
}

/**
 * `src` checked against `chunks`; at the first mismatch, `recover` gives the source that serves
 * that read and every later one instead (its failure is every such read's).
 */
export function checkedSource(
  src: ByteSource,
  chunks: Chunks,
  recover: (mismatch: ChunkMismatch) => Promise<ByteSource>,
): ByteSource {
  const stored = new ChunkCheck(src, chunks);
  let instead: Promise<ByteSource> | undefined;
  const run = async <T>(read: (s: ByteSource) => Promise<T>): Promise<T> => {
    if (instead) return await read(await instead);
    try {
      return await read(stored);
    } catch (e) {
      // A read of the dropped entry that was under way at the mismatch fails its own way.
      if (!(e instanceof ChunkMismatch) && instead === undefined) throw e;
      instead ??= recover(e as ChunkMismatch);
      return await read(await instead);
    }
  };
  return {
    name: src.name,
    size: src.size,
    read: (offset, length) => run((s) => s.read(offset, length)),
    readInto: (offset, into) => run((s) => readInto(s, offset, into)),
    release() {
      stored.release();
      void instead?.then((s) => s.release?.(), () => {});
    },
  };
}

/**
 * A complete entry of `storage` (sidecar `meta`, bytes `src`) served checked: at a mismatch the
 * entry is dropped and the file read from `meta.url` through `fetchFn`, checked against the same
 * hashes; the `EngineError` when that fails says why (see the module's notes).
 */
export function storedEntry(
  storage: EntryStorage,
  key: string,
  meta: EntryMeta & { chunks: Chunks },
  src: ByteSource,
  fetchFn: typeof fetch,
): ByteSource {
  return checkedSource(src, meta.chunks, async (bad) => {
    src.release?.();
    await drop(storage, key, meta);
    const what =
      `the model store's copy of ${meta.url} was corrupt (${bad.message}) and was dropped`;
    const failed = (e: unknown) =>
      new EngineError(
        e instanceof EngineError ? e.type : "CannotConnect",
        `${what}; reading it from the network failed too: ${(e as Error)?.message ?? e}`,
        { cause: e },
      );
    let net: ByteSource;
    try {
      const opened = await openUrl(meta.url, fetchFn);
      if (opened.kind !== "file") {
        throw new Error(
          `the server ${opened.kind === "html" ? "answered HTML" : "has no such file"}`,
        );
      }
      net = opened.source;
    } catch (e) {
      throw failed(e);
    }
    if (net.size !== meta.size) {
      throw failed(
        new Error(`the server's file is ${net.size} bytes, the stored one ${meta.size}`),
      );
    }
    const checked = new ChunkCheck(net, meta.chunks);
    const mapped = async <T>(read: Promise<T>): Promise<T> => {
      try {
        return await read;
      } catch (e) {
        throw failed(
          e instanceof ChunkMismatch ? new Error(`the server's file differs: ${e.message}`) : e,
        );
      }
    };
    return {
      name: net.name,
      size: net.size,
      read: (offset, length) => mapped(checked.read(offset, length)),
      readInto: (offset, into) => mapped(checked.readInto(offset, into)),
      release: () => checked.release(),
    };
  });
}

/**
 * Delete entry `key` if its sidecar is still `meta` (no other realm has replaced it since). Where
 * the storage refuses (another realm holds the file open), its sidecar is made to say nothing
 * of it is usable (size 0: the next download starts from zero).
 */
async function drop(storage: EntryStorage, key: string, meta: EntryMeta): Promise<void> {
  const now = await storage.meta(key).catch(() => undefined);
  if (now?.updated !== meta.updated) return;
  try {
    await storage.delete(key);
  } catch {
    const unusable: EntryMeta = { ...meta, size: 0, complete: false, updated: Date.now() };
    delete unusable.chunks;
    delete unusable.sha256;
    delete unusable.validator;
    await storage.setMeta(key, unusable).catch(() => {});
  }
}

/**
 * One pass over `src`: the XXH32 of each `chunkBytes` (as `EntryMeta.chunks` records them) and,
 * if `withSha256`, the SHA-256 (hex), read 16 MiB at a time.
 */
export async function hashEntry(
  src: ByteSource,
  chunkBytes: number,
  withSha256: boolean,
): Promise<{ chunks: Chunks; sha256?: string }> {
  const chunks = new ChunkHasher(chunkBytes);
  const sha = withSha256 ? sha256.create() : undefined;
  const step = 16 * 1024 * 1024;
  for (let at = 0; at < src.size; at += step) {
    const piece = await src.read(at, Math.min(step, src.size - at));
    chunks.update(piece);
    sha?.update(piece);
  }
  return {
    chunks: { bytes: chunkBytes, xxh32: chunks.finish() },
    ...(sha
      ? { sha256: [...sha.digest()].map((b) => b.toString(16).padStart(2, "0")).join("") }
      : {}),
  };
}
