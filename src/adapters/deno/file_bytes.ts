/** A file on disk as a `ByteSource` (Deno): read ranges with seek + read, never the whole file. */
import { describe } from "../../contract/describe.ts";
import { EngineError } from "../../contract/errors.ts";
import type { ByteSource } from "../../formats/source.ts";

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
