/**
 * Where model files come from: a `ByteSource` reads ranges of one file without holding it
 * whole; a `ModelFiles` names the files of a checkpoint. Web-standard implementations here
 * (Blob/File) and in `url_source.ts` (HTTP); the file-system one lives in `src/adapters/deno/`.
 */
import { EngineError } from "../contract/errors.ts";
import { htmlPage, looksLikeHtml } from "./html.ts";

/** Random access to the bytes of one file. */
export interface ByteSource {
  /** The file's name, for messages. */
  readonly name: string;
  /** The file's size in bytes. */
  readonly size: number;
  /**
   * `length` bytes from `offset`. They may be a view into a copy the source keeps (a file
   * downloaded whole from a server without Range): do not write to them.
   */
  read(offset: number, length: number): Promise<Uint8Array>;
  /**
   * Fill `into` with the bytes from `offset` (all of them, or throw), without allocating: the
   * weight upload reads straight into its staging chunk through this where a source has it
   * (an OPFS file in a dedicated worker, a file on disk). {@linkcode readInto} falls back to
   * `read` for sources without it.
   */
  readInto?(offset: number, into: Uint8Array): Promise<void>;
  /**
   * Drop whatever the source holds in memory (a whole-file copy); later reads fetch again.
   * Called once a load has read what it needs.
   */
  release?(): void;
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
  /**
   * Make the files `names` whole and verified where the checkpoint keeps them before their bytes
   * are used in bulk: a store-backed checkpoint downloads them (resuming what an earlier try
   * left), checks sizes and content hashes, and only then serves reads from its copy. Absent
   * when there is nothing to prepare (local files, `File`s). Reads before it (a GGUF header,
   * `config.json`) may come straight from the network.
   */
  prepare?(names: readonly string[], onProgress?: (p: DownloadProgress) => void): Promise<void>;
}

/** Bytes moved so far and the rate: of one file, or of the whole download. */
export interface TransferProgress {
  /** Bytes present so far (counting what an earlier, resumed try left). */
  loaded: number;
  /** Bytes in all. */
  total: number;
  /** Recent rate over the network, bytes per second (0 before a rate is known). */
  bytesPerSecond: number;
  /** Seconds left at that rate; undefined while the rate is unknown. */
  secondsLeft: number | undefined;
}

/** A download's progress: the file being fetched, and every file of the model together. */
export interface DownloadProgress {
  /** The file's name in the checkpoint. */
  file: string;
  /** That file alone. */
  fileProgress: TransferProgress;
  /** Every file of the download together. */
  overall: TransferProgress;
}

/** The `InvalidArgument` for a required file the checkpoint lacks (naming where it looked). */
export function missingFile(files: ModelFiles, name: string): EngineError {
  return EngineError.invalidArgument(
    files.describeMissing?.(name) ?? `${files.location}: no ${name}`,
  );
}

/**
 * The UTF-8 text of an optional file, or undefined when the checkpoint has no such file or an
 * HTML page came in its place (a web server's SPA fallback for a missing file; see `html.ts`).
 */
export async function readText(files: ModelFiles, name: string): Promise<string | undefined> {
  const src = await files.open(name);
  if (src === undefined) return undefined;
  const bytes = await src.read(0, src.size);
  return looksLikeHtml(bytes) ? undefined : new TextDecoder().decode(bytes);
}

/**
 * The UTF-8 text of a required file: `InvalidArgument` naming it when the checkpoint has no
 * such file, or when an HTML page came in its place (saying so: an SPA fallback, likely).
 */
export async function requireText(files: ModelFiles, name: string): Promise<string> {
  const src = await files.open(name);
  if (src === undefined) throw missingFile(files, name);
  const bytes = await src.read(0, src.size);
  if (looksLikeHtml(bytes)) throw htmlPage(src.name);
  return new TextDecoder().decode(bytes);
}

/** Fill `into` from `src` at `offset`: through `src.readInto` where it has one, else a read. */
export async function readInto(src: ByteSource, offset: number, into: Uint8Array): Promise<void> {
  if (src.readInto) return await src.readInto(offset, into);
  const bytes = await src.read(offset, into.length);
  if (bytes.length !== into.length) {
    throw EngineError.invalidArgument(
      `${src.name}: read ${bytes.length} of ${into.length} bytes at ${offset} (truncated file?)`,
    );
  }
  into.set(bytes);
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
