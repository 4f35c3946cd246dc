/**
 * Where the demo's checkpoints come from: a base URL (an HF repo's `resolve/main/` layout, the
 * embedded fortune model next to the page, or a `.gguf` file's URL), read through the library's
 * model store (`storedFiles`: OPFS, resumable and verified downloads, quota); or files the user
 * picked or dropped. A URL whose folder has safetensors weights (or a GGUF file) is opened by
 * URL, so the engine reads it from the store and can be shared by the origin's tabs; a folder
 * with only `onnx/model*.onnx` (an ONNX export, the layout transformers.js reads) runs on
 * onnxruntime-web, whose engine takes `File`s: its files are downloaded into the store, then read
 * from there into `File`s.
 */

import { browserStore, storedFiles } from "../src/store/browser.ts";
import { entryKey } from "../src/store/storage.ts";
import { splitNames } from "../src/model/gguf/load.ts";
import { type DownloadProgress, ggufEntry, type ModelFiles } from "../src/formats/source.ts";

const REQUIRED = ["config.json", "tokenizer.json"];
const OPTIONAL = ["tokenizer_config.json", "generation_config.json"];

/** A URL or files that are not a model: the message names the URL (and its HTTP status). */
export class ModelSourceError extends Error {
  override name = "ModelSourceError";
}

/** How a URL model is opened: by URL (Kiln's engine, from the store), or an ONNX graph. */
export type UrlModel = { kind: "url"; base: string } | {
  kind: "onnx";
  base: string;
  graph: string;
};

const isGgufUrl = (url: string): boolean => {
  try {
    return new URL(url).pathname.endsWith(".gguf");
  } catch {
    return false;
  }
};

/**
 * Why `url` is absent (undefined: it is there): from the store's record where it has one for it (no request at all: a
 * reload asks the server nothing), else a HEAD (an HTML answer is a web server's SPA fallback
 * for a missing file). A server that refuses HEAD is taken at its word later, when the file is
 * read.
 */
async function absent(url: string): Promise<string | undefined> {
  const meta = await (await browserStore())?.storage.meta(entryKey(url)).catch(() => undefined);
  if (meta?.complete) {
    return meta.absent &&
      `${url}: ${meta.absent === "html" ? "an HTML page" : "HTTP 404 Not Found"}`;
  }
  let res: Response;
  try {
    res = await fetch(url, { method: "HEAD" });
  } catch (e) {
    throw new ModelSourceError(`${url}: ${(e as Error).message}`);
  }
  if (res.ok || res.status === 405 || res.status === 501) {
    const html = (res.headers.get("content-type") ?? "").startsWith("text/html");
    return html ? `${url}: an HTML page, not a model file` : undefined;
  }
  return `${url}: HTTP ${res.status} ${res.statusText}`.trim();
}

/**
 * Which way to open the checkpoint at `base`, by probing its files, likeliest first so that a
 * file that is there is found before absent alternatives are asked for (each absent one is a
 * 404 the browser logs): `config.json` (none: not a model), `model.safetensors`, a sharded
 * index, then an ONNX export's graph (`onnx/model_fp16.onnx` first when the adapter has
 * `shader-f16`, `f16`). A GGUF URL is opened as it is.
 */
export async function probeUrl(base: string, f16 = false): Promise<UrlModel> {
  if (isGgufUrl(base)) return { kind: "url", base };
  if (!base.endsWith("/")) base += "/";
  const at = (name: string) => new URL(name, base).href;
  const config = await absent(at("config.json"));
  if (config !== undefined) throw new ModelSourceError(config);
  if (!await absent(at("model.safetensors"))) return { kind: "url", base };
  if (!await absent(at("model.safetensors.index.json"))) return { kind: "url", base };
  for (const v of f16 ? ["model_fp16", "model"] : ["model", "model_fp16"]) {
    const graph = `onnx/${v}.onnx`;
    if (!await absent(at(graph))) return { kind: "onnx", base, graph };
  }
  throw new ModelSourceError(
    `${base}: no model.safetensors, model.safetensors.index.json or onnx/model.onnx`,
  );
}

/** A stored file read whole into a `File` named `name`, 16 MiB at a time. */
async function readFile(files: ModelFiles, path: string, name: string): Promise<File | undefined> {
  const src = await files.open(path);
  if (src === undefined) return undefined;
  const parts: BlobPart[] = [];
  const step = 16 * 1024 * 1024;
  for (let at = 0; at < src.size; at += step) {
    parts.push((await src.read(at, Math.min(step, src.size - at))).slice() as BlobPart);
  }
  src.release?.();
  return new File(parts, name);
}

/**
 * The `File`s of an ONNX export at `model.base`: its graph downloaded into the store (resumable,
 * with progress), then it and the JSON files read from the store.
 */
export async function onnxFiles(
  model: Extract<UrlModel, { kind: "onnx" }>,
  onProgress: (p: DownloadProgress) => void,
): Promise<File[]> {
  const files = storedFiles(model.base);
  await files.prepare?.([model.graph], onProgress);
  const out: File[] = [];
  for (const path of [...REQUIRED, model.graph, ...OPTIONAL]) {
    const file = await readFile(files, path, path.split("/").pop()!);
    if (file) out.push(file);
    else if (!OPTIONAL.includes(path)) {
      throw new ModelSourceError(files.describeMissing?.(path) ?? `${model.base}${path}: absent`);
    }
  }
  checkFiles(out, model.base);
  return out;
}

/** The ONNX graph among `files` (its base name is the variant the ort engine runs). */
export function onnxVariant(files: readonly File[]): string | undefined {
  return files.find((f) => f.name.endsWith(".onnx"))?.name.replace(/\.onnx$/, "");
}

/**
 * Files the user picked or dropped must be a GGUF model (one `.gguf`, or every split of one), or
 * include a config, a tokenizer and safetensors weights or one ONNX graph.
 */
export function checkFiles(files: readonly File[], where = "the chosen files"): void {
  const names = new Set(files.map((f) => f.name));
  let gguf: string | undefined;
  try {
    gguf = ggufEntry(names);
  } catch (e) {
    throw new ModelSourceError(`${where}: ${(e as Error).message}`);
  }
  if (gguf !== undefined) {
    const missing = splitNames(gguf).filter((n) => !names.has(n));
    if (missing.length > 0) {
      throw new ModelSourceError(`${where}: GGUF splits missing: ${missing.join(", ")}`);
    }
    return;
  }
  const missing = REQUIRED.filter((n) => !names.has(n));
  const onnx = [...names].filter((n) => n.endsWith(".onnx"));
  if (onnx.length > 1) {
    throw new ModelSourceError(`${where}: pick one ONNX graph, not ${onnx.length}`);
  }
  if (onnx.length === 0 && ![...names].some((n) => n.endsWith(".safetensors"))) {
    missing.push("*.safetensors");
  }
  if (missing.length > 0) {
    throw new ModelSourceError(`${where}: not a model (missing ${missing.join(", ")})`);
  }
}

/**
 * Drop the Cache Storage the demo kept its downloads in before the model store (they are never
 * read again); best effort.
 */
export async function dropOldCache(): Promise<void> {
  await globalThis.caches?.delete("kiln-models-v1").catch(() => false);
}
