/** Model files on disk (Deno): read ranges with seek + read, never the whole file at once. */
import { type ByteSource, fileListFiles, type ModelFiles, urlFiles } from "../../model/source.ts";
import type { ModelSpec } from "../../worker/protocol.ts";

export async function fileSource(path: string): Promise<ByteSource | undefined> {
  let size: number;
  try {
    size = (await Deno.stat(path)).size;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
  return {
    name: path,
    size,
    async read(offset, length) {
      const out = new Uint8Array(length);
      using file = await Deno.open(path, { read: true });
      await file.seek(offset, Deno.SeekMode.Start);
      let done = 0;
      while (done < length) {
        const n = await file.read(out.subarray(done));
        if (n === null) throw new Error(`${path}: unexpected end of file at ${offset + done}`);
        done += n;
      }
      return out;
    },
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

/** The files a worker's model spec names, as a Deno worker reads them. */
export function specFiles(spec: ModelSpec): ModelFiles {
  switch (spec.kind) {
    case "dir":
      return dirFiles(spec.path);
    case "url":
      return urlFiles(spec.base);
    case "files":
      return fileListFiles(spec.files);
  }
}
