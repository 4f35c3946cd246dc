/**
 * Where model files come from: a `ByteSource` reads ranges of one file without holding it
 * whole; a `ModelFiles` names the files of a checkpoint. Web-standard implementations here
 * (Blob/File, HTTP with Range); the file-system one lives in `src/adapters/deno/`.
 */
import { EngineError } from "../contract/errors.ts";

/** Random access to the bytes of one file. */
export interface ByteSource {
  /** The file's name, for messages. */
  readonly name: string;
  /** The file's size in bytes. */
  readonly size: number;
  /** `length` bytes from `offset`. */
  read(offset: number, length: number): Promise<Uint8Array>;
}

/** The files of one checkpoint, opened by name (`config.json`, `model.safetensors`, ...). */
export interface ModelFiles {
  /** Where the files are, for messages. */
  readonly location: string;
  /**
   * Set when the model is a GGUF file: the name `open` opens it by (for a split model, the
   * first split's; the others are opened by their names).
   */
  readonly gguf?: string;
  /** The file, or undefined when the checkpoint has no such file. */
  open(name: string): Promise<ByteSource | undefined>;
  /** Why `name` is absent, for messages (default: `<location>: no <name>`). */
  describeMissing?(name: string): string;
}

/** The `InvalidArgument` for a required file the checkpoint lacks (naming where it looked). */
export function missingFile(files: ModelFiles, name: string): EngineError {
  return EngineError.invalidArgument(
    files.describeMissing?.(name) ?? `${files.location}: no ${name}`,
  );
}

/** The UTF-8 text of file `name`, or undefined when the checkpoint has no such file. */
export async function readText(files: ModelFiles, name: string): Promise<string | undefined> {
  const src = await files.open(name);
  if (src === undefined) return undefined;
  return new TextDecoder().decode(await src.read(0, src.size));
}

/** A `ByteSource` over a `Blob` or `File`, reading slices on demand. */
export function blobSource(blob: Blob, name = (blob as File).name ?? "blob"): ByteSource {
  return {
    name,
    size: blob.size,
    async read(offset, length) {
      return new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer());
    },
  };
}

const SPLIT_ONE = /-00001-of-\d{5}\.gguf$/;

/**
 * The GGUF file among `names` a model opens by: the one `.gguf`, or the first of its splits;
 * undefined when there is none; `InvalidArgument` when it is ambiguous.
 */
export function ggufEntry(names: Iterable<string>): string | undefined {
  const ggufs = [...names].filter((n) => n.endsWith(".gguf"));
  if (ggufs.length === 0) return undefined;
  const first = ggufs.find((n) => SPLIT_ONE.test(n)) ?? (ggufs.length === 1 ? ggufs[0] : undefined);
  if (first === undefined) {
    throw EngineError.invalidArgument(
      `expected one .gguf file or the first of its splits, got ${ggufs.length} .gguf files`,
    );
  }
  return first;
}

/** Files dropped or picked in a browser, by base name (a `.gguf` among them is the model). */
export function fileListFiles(files: Iterable<File>): ModelFiles {
  const byName = new Map<string, File>();
  for (const f of files) byName.set(f.name.split("/").pop()!, f);
  const gguf = ggufEntry(byName.keys());
  return {
    location: gguf ?? `${byName.size} local files`,
    ...(gguf === undefined ? {} : { gguf }),
    open: (name) => {
      const f = byName.get(name);
      return Promise.resolve(f && blobSource(f, name));
    },
  };
}

function httpError(url: string, status: number, statusText: string): EngineError {
  const type = status === 404 ? "InvalidArgument" : "CannotConnect";
  return new EngineError(type, `${url}: HTTP ${status} ${statusText}`.trim());
}

/** A file over HTTP(S), read with Range requests. */
export async function urlSource(
  url: string,
  fetchFn: typeof fetch = fetch,
): Promise<ByteSource | undefined> {
  let head: Response;
  try {
    head = await fetchFn(url, { method: "HEAD" });
  } catch (e) {
    throw new EngineError("CannotConnect", `${url}: ${(e as Error).message}`, { cause: e });
  }
  if (head.status === 404) return undefined;
  if (!head.ok) throw httpError(url, head.status, head.statusText);
  const size = Number(head.headers.get("content-length"));
  if (!Number.isSafeInteger(size) || size < 0) {
    throw new EngineError("CannotConnect", `${url}: the server sent no Content-Length`);
  }
  return {
    name: url,
    size,
    async read(offset, length) {
      if (length === 0) return new Uint8Array(0);
      const res = await fetchFn(url, {
        headers: { range: `bytes=${offset}-${offset + length - 1}` },
      });
      if (!res.ok) throw httpError(url, res.status, res.statusText);
      const bytes = new Uint8Array(await res.arrayBuffer());
      if (res.status === 206) return bytes;
      // A server that ignores Range sends the whole file.
      return bytes.subarray(offset, offset + length);
    },
  };
}

/**
 * A checkpoint laid out under a base URL (an HF repo's `resolve/main/`), or a GGUF file's URL
 * (one ending in `.gguf`; a split model's first split).
 */
export function urlFiles(base: string, fetchFn: typeof fetch = fetch): ModelFiles {
  if (new URL(base).pathname.endsWith(".gguf")) {
    return {
      location: base,
      gguf: base,
      open: (url) => urlSource(url, fetchFn),
      describeMissing: (url) => `${url}: HTTP 404 Not Found`,
    };
  }
  const root = base.endsWith("/") ? base : `${base}/`;
  return {
    location: root,
    open: (name) => urlSource(new URL(name, root).href, fetchFn),
    describeMissing: (name) => `${new URL(name, root).href}: HTTP 404 Not Found`,
  };
}

/**
 * A model's name from where it lives: the last path segment of a directory or URL, skipping an
 * HF repo's `resolve/main` (`https://huggingface.co/ORG/NAME/resolve/main/` gives `NAME`), and a
 * GGUF file's extension and split suffix (`DIR/NAME-00001-of-00002.gguf` gives `NAME`).
 */
export function modelName(location: string): string {
  const path = /^https?:\/\//.test(location) ? new URL(location).pathname : location;
  const last = path.split("/").filter((p) => p !== "" && p !== "resolve" && p !== "main").pop();
  // A GGUF file: its name without the extension and split suffix.
  return last?.replace(/(-\d{5}-of-\d{5})?\.gguf$/, "") || "model";
}
