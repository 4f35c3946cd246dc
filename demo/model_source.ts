/**
 * Where the demo's checkpoints come from: a base URL (an HF repo's `resolve/main/` layout, or the
 * embedded fortune model next to the page), downloaded whole with byte progress and kept in the
 * browser's Cache Storage so a reload does not fetch again; or files the user picked or dropped.
 * Either way the worker receives `File`s. A folder with `onnx/model*.onnx` (an ONNX export, the
 * layout transformers.js reads) runs on onnxruntime-web instead of Kiln's kernels.
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

/** The weight files a checkpoint names: a sharded index's shards, else `model.safetensors`. */
async function weightNames(
  base: string,
  cache: Cache | undefined,
): Promise<{ names: string[]; index?: Blob }> {
  const index = await get(new URL("model.safetensors.index.json", base).href, cache, true);
  if (index === undefined) return { names: ["model.safetensors"] };
  const blob = await index.res.blob();
  let map: Record<string, string> | undefined;
  try {
    map = (JSON.parse(await blob.text()) as { weight_map?: Record<string, string> }).weight_map;
  } catch {
    throw new ModelSourceError(`${base}model.safetensors.index.json: not JSON (not a model?)`);
  }
  if (!map) throw new ModelSourceError(`${base}model.safetensors.index.json: no weight_map`);
  if (!index.cached) {
    await cache?.put(new URL("model.safetensors.index.json", base).href, new Response(blob));
  }
  return { names: [...new Set(Object.values(map))], index: blob };
}

/**
 * The ONNX graph of an export at `base`, if there is one: `onnx/model_fp16.onnx` first when the
 * adapter has `shader-f16`, else `onnx/model.onnx` (f32) first; whichever exists.
 */
async function onnxGraph(
  base: string,
  cache: Cache | undefined,
  f16: boolean,
): Promise<string | undefined> {
  const variants = f16 ? ["model_fp16", "model"] : ["model", "model_fp16"];
  for (const v of variants) {
    const href = new URL(`onnx/${v}.onnx`, base).href;
    if (await cache?.match(href)) return `onnx/${v}.onnx`;
    const head = await fetch(href, { method: "HEAD" }).catch(() => undefined);
    if (head?.ok) return `onnx/${v}.onnx`;
  }
  return undefined;
}

/** The ONNX graph among `files` (its base name is the variant the ort engine runs). */
export function onnxVariant(files: readonly File[]): string | undefined {
  return files.find((f) => f.name.endsWith(".onnx"))?.name.replace(/\.onnx$/, "");
}

/**
 * Download (or take from the cache) every file of the checkpoint at `base`: a folder's config,
 * tokenizer and safetensors (or ONNX graph), or a `.gguf` file's URL (and, for a split model,
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
  const onnx = gguf ? undefined : await onnxGraph(base, cache, f16);
  const { names: weights, index } = gguf
    ? { names: splitNames(base) }
    : onnx
    ? { names: [onnx] }
    : await weightNames(base, cache);
  const wanted = [
    ...(gguf ? [] : REQUIRED.map((n) => [n, false] as const)),
    ...(gguf ? [] : OPTIONAL.map((n) => [n, true] as const)),
    ...weights.map((n) => [n, false] as const),
  ];
  const responses: { name: string; href: string; res: Response; cached: boolean }[] = [];
  for (const [url, optional] of wanted) {
    const href = new URL(url, base).href;
    const got = await get(href, cache, optional);
    const name = new URL(href).pathname.split("/").pop()!;
    if (got) responses.push({ name, href, ...got });
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
