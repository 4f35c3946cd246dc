/**
 * Model files on disk (Deno): a checkpoint directory or GGUF file, and the files a worker's model
 * spec names. Ranges are read with seek + read (`file_bytes.ts`), never the whole file at once.
 */
import { fileListFiles, type ModelFiles } from "../../formats/source.ts";
import { urlFiles } from "../../formats/url_source.ts";
import { ModelStore } from "../../store/store.ts";
import type { ModelSpec } from "../../worker/protocol.ts";
import { dirStorage } from "./dir_storage.ts";
import { fileSource } from "./file_bytes.ts";

export { fileSource };

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
