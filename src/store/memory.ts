/** A model store backend in memory, for tests: the bytes and sidecars are plain fields. */
import type { ByteSource } from "../formats/source.ts";
import type { EntryMeta, EntryStorage, EntryWriter } from "./storage.ts";

/** An `EntryStorage` in memory; `entries` may be read and changed (to corrupt one, in tests). */
export class MemoryStorage implements EntryStorage {
  readonly kind: string = "memory";
  /** The stored bytes by key. */
  readonly bytes: Map<string, Uint8Array> = new Map();
  /** The sidecars by key. */
  readonly metas: Map<string, EntryMeta> = new Map();

  keys(): Promise<string[]> {
    return Promise.resolve([...this.metas.keys()]);
  }

  meta(key: string): Promise<EntryMeta | undefined> {
    const m = this.metas.get(key);
    return Promise.resolve(m && { ...m });
  }

  setMeta(key: string, meta: EntryMeta): Promise<void> {
    this.metas.set(key, { ...meta });
    return Promise.resolve();
  }

  length(key: string): Promise<number> {
    return Promise.resolve(this.bytes.get(key)?.length ?? 0);
  }

  writer(key: string, from: number): Promise<EntryWriter> {
    const parts = [(this.bytes.get(key) ?? new Uint8Array(0)).slice(0, from)];
    this.bytes.set(key, parts[0]!);
    return Promise.resolve({
      write: (b: Uint8Array) => {
        parts.push(b.slice());
        return Promise.resolve();
      },
      close: () => {
        const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
        let at = 0;
        for (const p of parts) all.set(p, (at += p.length) - p.length);
        this.bytes.set(key, all);
        parts.length = 0;
        parts.push(all);
        return Promise.resolve();
      },
    });
  }

  source(key: string, name: string): Promise<ByteSource | undefined> {
    const b = this.bytes.get(key);
    return Promise.resolve(
      b && {
        name,
        size: b.length,
        read: (offset, length) => Promise.resolve(b.slice(offset, offset + length)),
      },
    );
  }

  delete(key: string): Promise<void> {
    this.bytes.delete(key);
    this.metas.delete(key);
    return Promise.resolve();
  }
}
