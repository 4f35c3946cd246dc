/**
 * The model store's backend in a directory (Deno): `<key>.bin` holds an entry's bytes and
 * `<key>.json` its sidecar, under `$XDG_CACHE_HOME/kiln/models` (else `~/.cache/kiln/models`).
 * Bytes are written with `Deno.open` at an offset (the file truncated there first), so a
 * download cut anywhere resumes from what reached the disk.
 */
import type { ByteSource } from "../../formats/source.ts";
import type { EntryMeta, EntryStorage, EntryWriter } from "../../store/storage.ts";
import { fileSource } from "./file_bytes.ts";

/**
 * The default directory: `$KILN_CACHE_DIR` when set, else `$XDG_CACHE_HOME/kiln/models`, else
 * `$HOME/.cache/kiln/models`.
 */
export function cacheDir(): string {
  const own = Deno.env.get("KILN_CACHE_DIR");
  if (own && own !== "") return own;
  const xdg = Deno.env.get("XDG_CACHE_HOME");
  const base = xdg && xdg !== "" ? xdg : `${Deno.env.get("HOME") ?? "."}/.cache`;
  return `${base}/kiln/models`;
}

async function size(path: string): Promise<number> {
  try {
    return (await Deno.stat(path)).size;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return 0;
    throw e;
  }
}

async function remove(path: string): Promise<void> {
  await Deno.remove(path).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
}

/** An `EntryStorage` in directory `dir` (default `cacheDir()`), created on first write. */
export function dirStorage(dir: string = cacheDir()): EntryStorage {
  const bin = (key: string) => `${dir}/${key}.bin`;
  const json = (key: string) => `${dir}/${key}.json`;
  return {
    kind: dir,
    async keys() {
      const out: string[] = [];
      try {
        for await (const e of Deno.readDir(dir)) {
          if (e.isFile && e.name.endsWith(".json")) out.push(e.name.slice(0, -5));
        }
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      }
      return out;
    },
    async meta(key) {
      try {
        return JSON.parse(await Deno.readTextFile(json(key))) as EntryMeta;
      } catch {
        return undefined;
      }
    },
    async setMeta(key, meta) {
      await Deno.mkdir(dir, { recursive: true });
      // Written beside and renamed, so that a crash leaves the old sidecar or the new one.
      await Deno.writeTextFile(`${json(key)}.tmp`, JSON.stringify(meta));
      await Deno.rename(`${json(key)}.tmp`, json(key));
    },
    length: (key) => size(bin(key)),
    async writer(key, from): Promise<EntryWriter> {
      await Deno.mkdir(dir, { recursive: true });
      const file = await Deno.open(bin(key), { write: true, create: true });
      await file.truncate(from);
      await file.seek(from, Deno.SeekMode.Start);
      return {
        async write(bytes) {
          for (let done = 0; done < bytes.length;) done += await file.write(bytes.subarray(done));
        },
        close() {
          file.close();
          return Promise.resolve();
        },
      };
    },
    async source(key, name): Promise<ByteSource | undefined> {
      const src = await fileSource(bin(key));
      return src && { ...src, name };
    },
    async delete(key) {
      await remove(bin(key));
      await remove(json(key));
    },
  };
}
