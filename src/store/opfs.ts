/**
 * The model store's backend in the Origin Private File System: directory `kiln-models`, with
 * `<key>.bin` (the bytes) and `<key>.json` (the sidecar) per entry. Bytes are written with a
 * synchronous access handle where there is one (a dedicated worker), else with a writable
 * stream that keeps the existing data and writes at an offset (a SharedWorker, the page);
 * either way each writer's bytes are on disk once it is closed. A complete entry is read as
 * slices of the file (`getFile()`), never whole.
 */
import { EngineError } from "../contract/errors.ts";
import { type ByteSource, readInto } from "../formats/source.ts";
import type { EntryMeta, EntryStorage, EntryWriter } from "./storage.ts";

/** The parts of the File System Access API used here (not in every TypeScript lib). */
interface SyncHandle {
  read(into: Uint8Array, options: { at: number }): number;
  write(bytes: Uint8Array, options: { at: number }): number;
  truncate(size: number): void;
  flush(): void;
  close(): void;
}
interface Writable {
  write(data: { type: "write"; position: number; data: Uint8Array } | string): Promise<void>;
  truncate(size: number): Promise<void>;
  close(): Promise<void>;
}
interface FileHandle {
  getFile(): Promise<File>;
  createWritable(options?: { keepExistingData?: boolean }): Promise<Writable>;
  createSyncAccessHandle?(options?: { mode?: "readwrite" | "read-only" }): Promise<SyncHandle>;
}
interface DirHandle {
  getDirectoryHandle(name: string, options?: { create?: boolean }): Promise<DirHandle>;
  getFileHandle(name: string, options?: { create?: boolean }): Promise<FileHandle>;
  removeEntry(name: string): Promise<void>;
  keys(): AsyncIterable<string>;
}

const notFound = (e: unknown) =>
  (e as Error)?.name === "NotFoundError" || (e as Error)?.name === "TypeMismatchError";

/** An `EntryStorage` in an OPFS directory; `OpfsStorage.open()` gives the default one. */
export class OpfsStorage implements EntryStorage {
  readonly kind: string = "opfs";

  readonly #dir: DirHandle;

  /** A store in `dir` (a `FileSystemDirectoryHandle`). */
  constructor(dir: object) {
    this.#dir = dir as DirHandle;
  }

  /**
   * The directory `name` (default `kiln-models`) of this origin's OPFS, or undefined where
   * there is no OPFS (or it is refused: an opaque origin, some private modes).
   */
  static async open(name = "kiln-models"): Promise<OpfsStorage | undefined> {
    const storage = (globalThis as {
      navigator?: { storage?: { getDirectory?: () => Promise<DirHandle> } };
    }).navigator?.storage;
    if (typeof storage?.getDirectory !== "function") return undefined;
    try {
      const root = await storage.getDirectory();
      return new OpfsStorage(await root.getDirectoryHandle(name, { create: true }));
    } catch {
      return undefined;
    }
  }

  async #file(name: string, create = false): Promise<FileHandle | undefined> {
    try {
      return await this.#dir.getFileHandle(name, { create });
    } catch (e) {
      if (notFound(e)) return undefined;
      throw e;
    }
  }

  async keys(): Promise<string[]> {
    const out: string[] = [];
    for await (const name of this.#dir.keys()) {
      if (name.endsWith(".json")) out.push(name.slice(0, -5));
    }
    return out;
  }

  async meta(key: string): Promise<EntryMeta | undefined> {
    const f = await this.#file(`${key}.json`);
    try {
      return f && JSON.parse(await (await f.getFile()).text()) as EntryMeta;
    } catch {
      return undefined;
    }
  }

  async setMeta(key: string, meta: EntryMeta): Promise<void> {
    const w = await (await this.#file(`${key}.json`, true))!.createWritable();
    await w.write(JSON.stringify(meta));
    await w.close();
  }

  async length(key: string): Promise<number> {
    const f = await this.#file(`${key}.bin`);
    return f ? (await f.getFile()).size : 0;
  }

  async writer(key: string, from: number): Promise<EntryWriter> {
    const f = (await this.#file(`${key}.bin`, true))!;
    let at = from;
    let sync: SyncHandle | undefined;
    try {
      sync = await f.createSyncAccessHandle?.();
    } catch {
      sync = undefined; // not in a dedicated worker, or the file is busy
    }
    if (sync) {
      const h = sync;
      h.truncate(from);
      return {
        write(bytes) {
          for (let done = 0; done < bytes.length;) {
            done += h.write(bytes.subarray(done), { at: at + done });
          }
          at += bytes.length;
          return Promise.resolve();
        },
        close() {
          h.flush();
          h.close();
          return Promise.resolve();
        },
      };
    }
    const w = await f.createWritable({ keepExistingData: true });
    await w.truncate(from);
    return {
      async write(bytes) {
        await w.write({ type: "write", position: at, data: bytes });
        at += bytes.length;
      },
      close: () => w.close(),
    };
  }

  async source(key: string, name: string): Promise<ByteSource | undefined> {
    const f = await this.#file(`${key}.bin`);
    if (!f) return undefined;
    const file = await f.getFile();
    return new OpfsSource(f, file, name);
  }

  async delete(key: string): Promise<void> {
    for (const name of [`${key}.bin`, `${key}.json`]) {
      await this.#dir.removeEntry(name).catch((e) => {
        if (!notFound(e)) throw e;
      });
    }
  }
}

/**
 * A complete entry's bytes. `read` takes slices of the file; `readInto` (the weight upload) reads
 * through a read-only synchronous access handle straight into the caller's buffer, where there is
 * one (a dedicated worker), so that loading a model allocates nothing per chunk. The handle is
 * opened at the first `readInto` and closed by `release()` (the end of a load); where it cannot
 * be opened (not a dedicated worker, a writer holds the file), slices are read instead.
 */
class OpfsSource implements ByteSource {
  readonly size: number;
  #sync: SyncHandle | undefined;
  /** No synchronous handle here: read slices until `release()`. */
  #noSync = false;

  constructor(readonly handle: FileHandle, readonly file: File, readonly name: string) {
    this.size = file.size;
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    return new Uint8Array(await this.file.slice(offset, offset + length).arrayBuffer());
  }

  async readInto(offset: number, into: Uint8Array): Promise<void> {
    const sync = await this.#handle();
    if (!sync) {
      return await readInto(
        {
          name: this.name,
          size: this.size,
          read: (o, n) => this.read(o, n),
        },
        offset,
        into,
      );
    }
    for (let done = 0; done < into.length;) {
      const n = sync.read(into.subarray(done), { at: offset + done });
      if (n <= 0) {
        throw EngineError.invalidArgument(
          `${this.name}: the stored file ends at ${offset + done} (expected ${this.size} bytes)`,
        );
      }
      done += n;
    }
  }

  async #handle(): Promise<SyncHandle | undefined> {
    if (this.#sync || this.#noSync) return this.#sync;
    try {
      this.#sync = await this.handle.createSyncAccessHandle?.({ mode: "read-only" });
    } catch {
      this.#sync = undefined;
    }
    this.#noSync = this.#sync === undefined;
    return this.#sync;
  }

  release(): void {
    this.#sync?.close();
    this.#sync = undefined;
    this.#noSync = false;
  }
}
