/**
 * Where the demo's checkpoints come from: a base URL (an HF repo's `resolve/main/` layout, or the
 * embedded fortune model next to the page), downloaded whole with byte progress and kept in the
 * browser's Cache Storage so a reload does not fetch again; or files the user picked or dropped.
 * Either way the worker receives `File`s. A folder with safetensors weights runs on Kiln's
 * kernels; one with only `onnx/model*.onnx` (an ONNX export, the layout transformers.js reads)
 * runs on onnxruntime-web.
 */

import { splitNames } from "../src/model/gguf/load.ts";
import { ggufEntry } from "../src/model/source.ts";

const CACHE = "kiln-models-v1";
const REQUIRED = ["config.json", "tokenizer.json"];
const OPTIONAL = ["tokenizer_config.json", "generation_config.json"];

/** Bytes so far of the whole download (`total` 0 until the sizes are known). */
export type Progress = (loaded: number, total: number, file: string) => void;

/** A URL that failed: the message names the URL and its HTTP status. */
export class ModelSourceError extends Error {
  override name = "ModelSourceError";
}

async function openCache(): Promise<Cache | undefined> {
  try {
    return "caches" in globalThis ? await caches.open(CACHE) : undefined;
  } catch {
    return undefined; // Cache Storage refused (private mode, opaque origin): download each time
  }
}

/** The response for `url`, from the cache when present; `undefined` for a 404 when optional. */
async function get(
  url: string,
  cache: Cache | undefined,
  optional: boolean,
): Promise<{ res: Response; cached: boolean } | undefined> {
  const hit = await cache?.match(url);
  if (hit) return { res: hit, cached: true };
  let res: Response;
  try {
    res = await fetch(url);
  } catch (e) {
    throw new ModelSourceError(`${url}: ${(e as Error).message}`);
  }
  if (res.status === 404 && optional) return undefined;
  if (!res.ok) throw new ModelSourceError(`${url}: HTTP ${res.status} ${res.statusText}`.trim());
  return { res, cached: false };
}

/** Read a body to a Blob, reporting bytes as they arrive. */
async function readBody(res: Response, onBytes: (n: number) => void): Promise<Blob> {
  if (!res.body) return await res.blob();
  const parts: Uint8Array[] = [];
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    onBytes(value.byteLength);
  }
  return new Blob(parts as BlobPart[]);
}

/** A file of the checkpoint, its response not read yet. */
interface Fetched {
  name: string;
  href: string;
  res: Response;
  cached: boolean;
}

/** `url` under `base` (from the cache when present); undefined for a 404 when optional. */
async function fetchFile(
  base: string,
  url: string,
  cache: Cache | undefined,
  optional: boolean,
): Promise<Fetched | undefined> {
  const href = new URL(url, base).href;
  const got = await get(href, cache, optional);
  return got && { name: new URL(href).pathname.split("/").pop()!, href, ...got };
}

/**
 * The weight files of the folder at `base`, asking for the likeliest first so that a file that
 * is there is found before absent alternatives are tried (each absent one is a 404 the browser
 * logs as an error): `model.safetensors`; else a sharded index's shards; else an ONNX export's
 * graph, `onnx/model_fp16.onnx` first when the adapter has `shader-f16` (`f16`), else
 * `onnx/model.onnx` first. Undefined when there is none of them.
 */
async function weightFiles(
  base: string,
  cache: Cache | undefined,
  f16: boolean,
): Promise<{ files: Fetched[]; index?: Blob } | undefined> {
  const single = await fetchFile(base, "model.safetensors", cache, true);
  if (single) return { files: [single] };
  const href = new URL("model.safetensors.index.json", base).href;
  const index = await get(href, cache, true);
  if (index !== undefined) {
    const blob = await index.res.blob();
    let map: Record<string, string> | undefined;
    try {
      map = (JSON.parse(await blob.text()) as { weight_map?: Record<string, string> }).weight_map;
    } catch {
      throw new ModelSourceError(`${href}: not JSON (not a model?)`);
    }
    if (!map) throw new ModelSourceError(`${href}: no weight_map`);
    if (!index.cached) await cache?.put(href, new Response(blob));
    const files: Fetched[] = [];
    for (const shard of new Set(Object.values(map))) {
      files.push((await fetchFile(base, shard, cache, false))!);
    }
    return { files, index: blob };
  }
  for (const v of f16 ? ["model_fp16", "model"] : ["model", "model_fp16"]) {
    const graph = await fetchFile(base, `onnx/${v}.onnx`, cache, true);
    if (graph) return { files: [graph] };
  }
  return undefined;
}

/** The ONNX graph among `files` (its base name is the variant the ort engine runs). */
export function onnxVariant(files: readonly File[]): string | undefined {
  return files.find((f) => f.name.endsWith(".onnx"))?.name.replace(/\.onnx$/, "");
}

/**
 * Download (or take from the cache) every file of the checkpoint at `base`: a folder's config,
 * tokenizer and weights (see `weightNames`), or a `.gguf` file's URL (and, for a split model,
 * its other splits). `f16`: the adapter has `shader-f16` (an ONNX export's f16 graph runs).
 */
export async function filesFromUrl(
  base: string,
  onProgress: Progress,
  f16 = false,
): Promise<File[]> {
  const cache = await openCache();
  const gguf = isGgufUrl(base);
  if (!gguf && !base.endsWith("/")) base += "/";
  const responses: Fetched[] = [];
  const fetchAll = async (names: readonly string[], optional: boolean) => {
    for (const url of names) {
      const got = await fetchFile(base, url, cache, optional);
      if (got) responses.push(got);
    }
  };
  let index: Blob | undefined;
  if (gguf) {
    await fetchAll(splitNames(base), false);
  } else {
    // The required files first: a folder that is not a model fails on its config alone.
    await fetchAll(REQUIRED, false);
    const weights = await weightFiles(base, cache, f16);
    if (weights === undefined) {
      throw new ModelSourceError(
        `${base}: no model.safetensors, model.safetensors.index.json or onnx/model.onnx`,
      );
    }
    index = weights.index;
    responses.push(...weights.files);
    await fetchAll(OPTIONAL, true);
  }
  const total = responses.reduce((s, r) => s + Number(r.res.headers.get("content-length") ?? 0), 0);
  let loaded = 0;
  const files: File[] = [];
  if (index) files.push(new File([index], "model.safetensors.index.json"));
  for (const { name, href, res, cached } of responses) {
    const blob = await readBody(res, (n) => onProgress(loaded += n, total, name));
    if (!cached) await cache?.put(href, new Response(blob));
    files.push(new File([blob], name));
  }
  checkFiles(files, base);
  return files;
}

const isGgufUrl = (url: string): boolean => {
  try {
    return new URL(url).pathname.endsWith(".gguf");
  } catch {
    return false;
  }
};

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

/** Forget every cached download. */
export async function clearModelCache(): Promise<boolean> {
  return "caches" in globalThis ? await caches.delete(CACHE) : false;
}
