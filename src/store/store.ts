/**
 * A model store: the files of checkpoints kept in an `EntryStorage` (OPFS, Cache Storage, a
 * directory), laid out as `urlFiles` lays them out. `files(base)` opens a file from the store
 * when its entry is complete (no request at all), else reads through to the network; small
 * files (JSON, up to `smallBytes`) are stored as they are read, and absent ones remembered, so
 * that a reload asks nothing. `prepare` downloads the weights (resumably, verified; see
 * `download.ts`) after a quota check, reporting progress, and from then on every read of them
 * comes from the store.
 *
 * What is verified, when:
 * - Downloading: the size, and the SHA-256 where the server gives one (HF's `x-linked-etag`),
 *   before the entry is marked complete; the sidecar records the XXH32 of each 4 MiB chunk.
 * - Opening a complete entry: its size (a short one is fetched again); with `verify: "sha256"`,
 *   its SHA-256 too where known (a whole pass, every open).
 * - Reading: each chunk, the first time any of its bytes are read from a copy this store handed
 *   out, before they are handed on (`checked.ts`). A mismatch drops the entry (the next open
 *   fetches it again) and serves the load under way from the network, checked against the
 *   same hashes; if that fails too, the read is an `EngineError` saying the store's copy was
 *   corrupt (chunk i of n) and was dropped.
 * - An entry stored before chunk hashes were recorded is hashed whole when first opened and its
 *   hashes recorded: checked against its SHA-256 where the sidecar has one (dropped if wrong),
 *   else trusted as it is (the same trust the old size check gave it). One pass, once.
 */
import { EngineError } from "../contract/errors.ts";
import { htmlMessage } from "../formats/html.ts";
import {
  type ByteSource,
  type DownloadProgress,
  type ModelFiles,
  modelName,
  readInto,
} from "../formats/source.ts";
import { openUrl, urlLayout } from "../formats/url_source.ts";
import { hashEntry, storedEntry, validChunks } from "./checked.ts";
import { download, type DownloadOptions, type EntryName } from "./download.ts";
import { confirmAbsent, fileProgress } from "./prepare_steps.ts";
import { Meter } from "./progress.ts";
import { describeRemote } from "./remote.ts";
import { entryKey, type EntryMeta, type EntryStorage, HASH_CHUNK_BYTES } from "./storage.ts";

/** How a `ModelStore` downloads and checks. */
export interface ModelStoreOptions {
  /** The `fetch` to use (default: the global one). */
  fetch?: typeof fetch;
  /** Bytes per Range request (default 16 MiB). */
  chunkBytes?: number;
  /** Failures in a row without progress before a download gives up (default 6). */
  retries?: number;
  /** The first retry's wait in ms, doubled each time (default 500). */
  backoffMs?: number;
  /** The storage's usage and quota (a browser's `navigator.storage.estimate`). */
  estimate?: () => Promise<{ usage?: number; quota?: number }>;
  /** Ask that the storage be kept (a browser's `navigator.storage.persist`); called once. */
  persist?: () => Promise<boolean>;
  /** Files up to this size are stored when read (default 16 MiB: the JSON files). */
  smallBytes?: number;
  /**
   * How a complete entry is checked when opened: `"size"` (default: its length) or
   * `"sha256"` (rehash it where the hash is known; a GB file takes seconds). Either way each
   * chunk is checked against its recorded hash when first read.
   */
  verify?: "size" | "sha256";
  /** Bytes per hashed chunk of the entries it stores (default `HASH_CHUNK_BYTES`, 4 MiB). */
  hashChunkBytes?: number;
}

/** One file of a stored model. */
export interface CachedFile {
  /** Its name in the model. */
  name: string;
  /** Its URL. */
  url: string;
  /** Its size in bytes. */
  size: number;
  /** Bytes present. */
  loaded: number;
  /** Present whole and verified. */
  complete: boolean;
}

/** A model in the store. */
export interface CachedModel {
  /** The base URL (or GGUF URL) it was opened from. */
  base: string;
  /** Its name (`modelName(base)`). */
  name: string;
  /** Its files in the store. */
  files: CachedFile[];
  /** Bytes stored, all files. */
  bytes: number;
}

/** What the functions of one `files(base)` share. */
interface View {
  /** The checkpoint's location (`urlLayout(base).location`). */
  location: string;
  /** The store entry of file `name`. */
  entry: (name: string) => EntryName;
  /** URLs answered with an HTML page rather than the file. */
  html: Set<string>;
  /** Sources of files `prepare` made complete, by key. */
  local: Map<string, ByteSource>;
}

/** Checkpoints kept in `storage`; see the module's notes. */
export class ModelStore {
  readonly #fetch: typeof fetch;
  readonly #options: ModelStoreOptions;
  #persisted: Promise<boolean> | undefined;
  /** Downloads under way, by key (one per entry at a time). */
  readonly #running = new Map<string, Promise<EntryMeta>>();
  /** Whole-entry hashing passes under way, by key. */
  readonly #hashing = new Map<string, Promise<EntryMeta | undefined>>();

  /**
   * A store over `storage`.
   *
   * @param storage Where the files are kept.
   * @param options How they are downloaded and checked.
   */
  constructor(readonly storage: EntryStorage, options: ModelStoreOptions = {}) {
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#options = options;
  }

  #download(onLoaded?: DownloadOptions["onLoaded"]): DownloadOptions {
    return {
      fetch: this.#fetch,
      chunkBytes: this.#options.chunkBytes ?? 16 * 1024 * 1024,
      retries: this.#options.retries ?? 6,
      hashChunkBytes: this.#options.hashChunkBytes ?? HASH_CHUNK_BYTES,
      ...(this.#options.backoffMs === undefined ? {} : { backoffMs: this.#options.backoffMs }),
      ...(onLoaded ? { onLoaded } : {}),
    };
  }

  /** `run` for `key`, or the run already under way for it. */
  #once(key: string, run: () => Promise<EntryMeta>): Promise<EntryMeta> {
    let p = this.#running.get(key);
    if (!p) {
      p = run().finally(() => this.#running.delete(key));
      this.#running.set(key, p);
    }
    return p;
  }

  /**
   * The stored copy of a complete entry, checked as it is read (`checked.ts`); undefined (and
   * the entry dropped) if its size is wrong, or its SHA-256 where that is checked here.
   */
  async #stored(key: string, meta: EntryMeta): Promise<ByteSource | undefined> {
    const src = await this.storage.source(key, meta.url);
    let checked = src !== undefined && src.size === meta.size ? meta : undefined;
    const sha = this.#options.verify === "sha256" && meta.sha256 !== undefined;
    if (checked && (sha || !validChunks(meta.chunks, meta.size))) {
      let pass = this.#hashing.get(key);
      if (!pass) {
        pass = this.#hashAll(key, meta, src!).finally(() => this.#hashing.delete(key));
        this.#hashing.set(key, pass);
      }
      checked = await pass;
    }
    if (checked) return this.#checked(key, checked, src!);
    await this.storage.delete(key);
    return undefined;
  }

  /**
   * One pass over a complete entry: its SHA-256 checked where known and asked for, or where the
   * entry has no chunk hashes (stored by an older Kiln), and those recorded (see the module's
   * notes). The sidecar to serve it by, or undefined when its SHA-256 is wrong.
   */
  async #hashAll(key: string, meta: EntryMeta, src: ByteSource): Promise<EntryMeta | undefined> {
    const bytes = this.#options.hashChunkBytes ?? HASH_CHUNK_BYTES;
    const got = await hashEntry(src, bytes, meta.sha256 !== undefined);
    if (got.sha256 !== meta.sha256) return undefined;
    if (validChunks(meta.chunks, meta.size)) return meta;
    const recorded = { ...meta, chunks: got.chunks };
    await this.storage.setMeta(key, recorded);
    return recorded;
  }

  /** `src`, the bytes of complete entry `key`, checked as it is read where it can be. */
  #checked(key: string, meta: EntryMeta, src: ByteSource): ByteSource {
    const { chunks } = meta;
    return validChunks(chunks, meta.size)
      ? storedEntry(this.storage, key, { ...meta, chunks }, src, this.#fetch)
      : src;
  }

  /** A checkpoint at `base` (as `urlFiles` takes it) read through this store. */
  files(base: string): ModelFiles {
    const { location, gguf, at } = urlLayout(base);
    const view: View = {
      location,
      entry: (name) => ({ url: at(name), base: location, name }),
      html: new Set<string>(),
      local: new Map<string, ByteSource>(),
    };
    const missing = (name: string) => {
      const url = at(name);
      // A file the model needs was reported missing (the load fails): forget that it was, so
      // that the next load asks the server again. Remembered, a server that answered HTML or
      // 404 for a while would leave the model unloadable until the cache was cleared.
      const key = entryKey(url);
      void this.storage.meta(key)
        .then((m) => m?.absent === undefined ? undefined : this.storage.delete(key))
        .catch(() => {});
      return view.html.has(url) ? htmlMessage(url) : `${url}: HTTP 404 Not Found`;
    };
    return {
      location,
      ...(gguf ? { gguf: location } : {}),
      open: (name) => this.#open(view, name),
      describeMissing: missing,
      prepare: (names, onProgress) => this.#prepare(view, names, onProgress),
    };
  }

  /** `files(…).open`: from the store where its entry is complete, else read through. */
  async #open(view: View, name: string): Promise<ByteSource | undefined> {
    const { html, local } = view;
    const e = view.entry(name), key = entryKey(e.url);
    const meta = await this.storage.meta(key);
    // An absent mark no successful load confirmed is asked about again: a server that
    // answered HTML or 404 for a while must not leave the model unloadable.
    if (meta?.complete && (meta.absent === undefined || meta.confirmed)) {
      if (meta.absent === "html") html.add(e.url);
      if (meta.absent) return undefined;
      const src = local.get(key) ?? await this.#stored(key, meta);
      if (src) return src;
    }
    const opened = await openUrl(e.url, this.#fetch);
    if (opened.kind !== "file") {
      if (opened.kind === "html") html.add(e.url);
      const absent = opened.kind === "html" ? "html" : "missing";
      await this.storage.setMeta(key, {
        ...e,
        size: 0,
        complete: true,
        absent,
        updated: Date.now(),
      });
      return undefined;
    }
    const net = opened.source;
    if (net.size <= (this.#options.smallBytes ?? 16 * 1024 * 1024)) {
      // Stored as it is read, best effort: where the store cannot take it (another realm
      // writing the same entry holds its lock), it is read over the network as before.
      const stored = await this.#once(key, () => download(this.storage, key, e, this.#download()))
        .then(async (done) => {
          const src = done.absent ? undefined : await this.storage.source(key, e.url);
          return src && this.#checked(key, done, src);
        })
        .catch(() => undefined);
      if (stored) return stored;
    }
    return {
      name: net.name,
      size: net.size,
      read: (offset, length) => (local.get(key) ?? net).read(offset, length),
      readInto: (offset, into) => readInto(local.get(key) ?? net, offset, into),
      release: () => (local.get(key) ?? net).release?.(),
    };
  }

  /** `files(…).prepare`: download what is not stored yet, then serve it from the store. */
  async #prepare(
    view: View,
    names: readonly string[],
    onProgress?: (p: DownloadProgress) => void,
  ): Promise<void> {
    const todo = await this.#plan(names.map(view.entry));
    const overall = new Meter(
      todo.reduce((n, t) => n + t.size, 0),
      todo.reduce((n, t) => n + t.present, 0),
    );
    const pending = todo.filter((t) => !t.done);
    if (pending.length > 0) {
      await this.#checkQuota(overall.total - overall.loaded);
      this.#persisted ??= this.#options.persist?.().catch(() => false) ?? Promise.resolve(false);
    }
    for (const t of pending) {
      const file = fileProgress(t.entry.name, t.size, t.present, overall, onProgress);
      const done = await this.#once(
        t.key,
        () => download(this.storage, t.key, t.entry, this.#download(file.onLoaded)),
      );
      file.report(true);
      if (done.absent !== undefined) continue;
      const src = await this.storage.source(t.key, t.entry.url);
      if (src) view.local.set(t.key, this.#checked(t.key, done, src));
    }
    await confirmAbsent(this.storage, view.location);
  }

  /** Each file's key, size and bytes present (asking the server about the incomplete ones). */
  async #plan(entries: { url: string; base: string; name: string }[]) {
    return await Promise.all(entries.map(async (entry) => {
      const key = entryKey(entry.url);
      const meta = await this.storage.meta(key);
      if (meta?.complete && (meta.absent || await this.#stored(key, meta))) {
        return { entry, key, size: meta.size, present: meta.size, done: true };
      }
      const remote = await describeRemote(this.#fetch, entry.url).catch(() => undefined);
      const size = typeof remote === "object" ? remote.size : meta?.size ?? 0;
      const same = typeof remote === "object" && meta?.size === size &&
        meta.validator === remote.validator;
      const present = same ? Math.min(size, await this.storage.length(key)) : 0;
      return { entry, key, size, present, done: false };
    }));
  }

  /** `ResourceExhausted` when `needed` more bytes do not fit the storage's quota. */
  async #checkQuota(needed: number): Promise<void> {
    const est = await this.#options.estimate?.().catch(() => undefined);
    if (est?.quota === undefined) return;
    const available = Math.max(0, est.quota - (est.usage ?? 0));
    if (needed > available) {
      throw new EngineError(
        "ResourceExhausted",
        `the model store (${this.storage.kind}) needs ${needed} more bytes; ${available} are available (quota ${est.quota}, used ${
          est.usage ?? 0
        })`,
      );
    }
  }

  /** The models in the store, with their files' sizes. */
  async list(): Promise<CachedModel[]> {
    const models = new Map<string, CachedModel>();
    for (const key of await this.storage.keys()) {
      const meta = await this.storage.meta(key);
      if (meta === undefined || meta.absent !== undefined) continue;
      const loaded = Math.min(meta.size, await this.storage.length(key));
      let m = models.get(meta.base);
      if (!m) {
        models.set(
          meta.base,
          m = { base: meta.base, name: modelName(meta.base), files: [], bytes: 0 },
        );
      }
      m.files.push({
        name: meta.name,
        url: meta.url,
        size: meta.size,
        loaded,
        complete: meta.complete,
      });
      m.bytes += loaded;
    }
    return [...models.values()];
  }

  /** Delete every file of the model at `base`; whether there was any. */
  async delete(base: string): Promise<boolean> {
    const { location } = urlLayout(base);
    let any = false;
    for (const key of await this.storage.keys()) {
      const meta = await this.storage.meta(key);
      if (meta?.base !== location) continue;
      await this.storage.delete(key);
      any = true;
    }
    return any;
  }
}
