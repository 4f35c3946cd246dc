/**
 * The model store's backend in Cache Storage, where there is no OPFS: one cache
 * (`kiln-model-store`), each entry's bytes as one response per fixed-size chunk (so that a
 * download resumes by chunk: a writer buffers at most one chunk), its sidecar as one more, and
 * an index of the keys (Cache Storage's own `keys()` is not everywhere). Reads take slices of
 * the chunks' blobs.
 */
import type { ByteSource } from "../formats/source.ts";
import type { EntryMeta, EntryStorage, EntryWriter } from "./storage.ts";

const ROOT = "https://kiln-model-store.invalid/";

/** An `EntryStorage` in a Cache Storage cache; `CacheStorageEntries.open()` gives the default. */
export class CacheStorageEntries implements EntryStorage {
  readonly kind: string = "cache-storage";

  /**
   * A store in `cache`.
   *
   * @param cache The cache.
   * @param chunkBytes Bytes per stored chunk (default 16 MiB).
   */
  constructor(readonly cache: Cache, readonly chunkBytes: number = 16 * 1024 * 1024) {}

  /** The cache `name` (default `kiln-model-store`), or undefined where it is refused. */
  static async open(name = "kiln-model-store"): Promise<CacheStorageEntries | undefined> {
    try {
      return "caches" in globalThis ? new CacheStorageEntries(await caches.open(name)) : undefined;
    } catch {
      return undefined;
    }
  }

  #chunk = (key: string, i: number) => `${ROOT}${key}/${i}`;

  async #json<T>(url: string): Promise<T | undefined> {
    const res = await this.cache.match(url);
    return res ? await res.json() as T : undefined;
  }

  async #index(change?: (keys: Set<string>) => void): Promise<string[]> {
    const keys = new Set(await this.#json<string[]>(`${ROOT}index`) ?? []);
    if (change) {
      change(keys);
      await this.cache.put(`${ROOT}index`, Response.json([...keys]));
    }
    return [...keys];
  }

  keys(): Promise<string[]> {
    return this.#index();
  }

  meta(key: string): Promise<EntryMeta | undefined> {
    return this.#json<EntryMeta>(`${ROOT}${key}/meta`);
  }

  async setMeta(key: string, meta: EntryMeta): Promise<void> {
    await this.cache.put(`${ROOT}${key}/meta`, Response.json(meta));
    await this.#index((k) => k.add(key));
  }

  /** The chunks' blobs, in order, up to the first missing one. */
  async #blobs(key: string): Promise<Blob[]> {
    const out: Blob[] = [];
    for (let i = 0;; i++) {
      const res = await this.cache.match(this.#chunk(key, i));
      if (!res) return out;
      out.push(await res.blob());
    }
  }

  async length(key: string): Promise<number> {
    return (await this.#blobs(key)).reduce((n, b) => n + b.size, 0);
  }

  async writer(key: string, from: number): Promise<EntryWriter> {
    const size = this.chunkBytes;
    let index = Math.floor(from / size);
    const keep = from - index * size;
    let parts: Uint8Array[] = [];
    let held = 0;
    if (keep > 0) {
      const res = await this.cache.match(this.#chunk(key, index));
      const head = new Uint8Array(await res!.arrayBuffer()).slice(0, keep);
      parts.push(head);
      held = keep;
    }
    for (let i = index; await this.cache.delete(this.#chunk(key, i)); i++);
    const put = async (bytes: Uint8Array) => {
      await this.cache.put(this.#chunk(key, index++), new Response(bytes as BlobPart));
    };
    const join = () => {
      const all = new Uint8Array(held);
      let at = 0;
      for (const p of parts) all.set(p, (at += p.length) - p.length);
      return all;
    };
    return {
      async write(bytes) {
        parts.push(bytes.slice());
        held += bytes.length;
        while (held >= size) {
          const all = join();
          await put(all.subarray(0, size));
          parts = [all.slice(size)];
          held -= size;
        }
      },
      async close() {
        if (held > 0) await put(join());
        parts = [];
        held = 0;
      },
    };
  }

  async source(key: string, name: string): Promise<ByteSource | undefined> {
    const blobs = await this.#blobs(key);
    if (blobs.length === 0) return undefined;
    const size = blobs.reduce((n, b) => n + b.size, 0);
    const chunk = this.chunkBytes;
    return {
      name,
      size,
      async read(offset, length) {
        const out = new Uint8Array(length);
        for (let done = 0; done < length;) {
          const at = offset + done, i = Math.floor(at / chunk), within = at - i * chunk;
          const n = Math.min(length - done, chunk - within);
          const piece = await blobs[i]!.slice(within, within + n).arrayBuffer();
          out.set(new Uint8Array(piece), done);
          done += piece.byteLength;
          if (piece.byteLength === 0) throw new RangeError(`${name}: read past the end`);
        }
        return out;
      },
    };
  }

  async delete(key: string): Promise<void> {
    for (let i = 0; await this.cache.delete(this.#chunk(key, i)); i++);
    await this.cache.delete(`${ROOT}${key}/meta`);
    await this.#index((k) => k.delete(key));
  }
}
