/** Model files on disk (Deno): read ranges with seek + read, never the whole file at once. */
import { describe } from "../../contract/describe.ts";
import { EngineError } from "../../contract/errors.ts";
import { type ByteSource, fileListFiles, type ModelFiles } from "../../formats/source.ts";
import { urlFiles } from "../../formats/url_source.ts";
import { ModelStore } from "../../store/store.ts";
import type { ModelSpec } from "../../worker/protocol.ts";
import { dirStorage } from "./dir_storage.ts";

/** A file-system failure as an `InvalidArgument` naming the path (never a raw `Deno.errors`). */
function fsError(path: string, e: unknown): EngineError {
  if (e instanceof EngineError) return e;
  const why = e instanceof Error ? `${e.name}: ${e.message}` : describe(e);
  return EngineError.invalidArgument(`${describe(path, 300)}: ${why}`, e);
}

/**
 * A file's ranges, or undefined when there is no such file. A directory, a name the file system
 * refuses (NUL, too long) or a failed read is an `InvalidArgument` naming the path.
 */
export async function fileSource(path: string): Promise<ByteSource | undefined> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw fsError(path, e);
  }
  if (!info.isFile) {
    throw EngineError.invalidArgument(
      `${describe(path, 300)}: ${info.isDirectory ? "is a directory" : "is not a regular file"}`,
    );
  }
  const size = info.size;
  const readInto = async (offset: number, into: Uint8Array): Promise<void> => {
    try {
      using file = await Deno.open(path, { read: true });
      await file.seek(offset, Deno.SeekMode.Start);
      let done = 0;
      while (done < into.length) {
        const n = await file.read(into.subarray(done));
        if (n === null) {
          throw EngineError.invalidArgument(
            `${describe(path, 300)}: unexpected end of file at ${offset + done}`,
          );
        }
        done += n;
      }
    } catch (e) {
      throw fsError(path, e);
    }
  };
  return {
    name: path,
    size,
    async read(offset, length) {
      const out = new Uint8Array(length);
      await readInto(offset, out);
      return out;
    },
    readInto,
  };
}

/**
 * The files of a checkpoint directory, or a GGUF model given by its file's path (a split
 * model's first split; the others are found beside it).
 */
export function dirFiles(dir: string): ModelFiles {
  if (dir.endsWith(".gguf")) {
    const slash = dir.lastIndexOf("/");
    const parent = dir.slice(0, slash + 1);
    return { location: dir, gguf: dir.slice(slash + 1), open: (name) => fileSource(parent + name) };
  }
  const root = dir.endsWith("/") ? dir : `${dir}/`;
  return { location: root, open: (name) => fileSource(root + name) };
}

/**
 * The files a worker's model spec names, as a Deno worker reads them: a URL's through the model
 * store in `cacheDir()` (see `dir_storage.ts`) unless `cache` is false.
 */
export function specFiles(spec: ModelSpec): ModelFiles {
  switch (spec.kind) {
    case "dir":
      return dirFiles(spec.path);
    case "url":
      // Kept in the XDG cache directory (resumed, verified) unless the spec says not to.
      return spec.cache === false
        ? urlFiles(spec.base)
        : new ModelStore(dirStorage()).files(spec.base);
    case "files":
      return fileListFiles(spec.files);
  }
}
