/**
 * What the converters share: a checkpoint folder read through Kiln's own loader (config,
 * safetensors headers, the checked weight map), tensor bytes, dtype changes, and the cache
 * folder converted files go to.
 */
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { type ModelConfig, parseConfig } from "../../src/model/config.ts";
import { readCheckpoint, type TensorInfo } from "../../src/formats/safetensors.ts";
import { mapWeights, type ModelWeights } from "../../src/model/weights.ts";
import { decodeWeights } from "../../src/gpu/dtype.ts";

export interface Checkpoint {
  dir: string;
  config: ModelConfig;
  weights: ModelWeights;
  /** The raw `config.json`. */
  json: Record<string, unknown>;
}

export async function openCheckpoint(dir: string): Promise<Checkpoint> {
  const text = await Deno.readTextFile(`${dir}/config.json`);
  const config = parseConfig(text);
  const files = dirFiles(dir);
  const tensors = await readCheckpoint((name) => files.open(name));
  return {
    dir,
    config,
    weights: mapWeights(config, tensors),
    json: JSON.parse(text),
  };
}

export function tensorBytes(t: TensorInfo): Promise<Uint8Array> {
  return t.source.read(t.offset, t.length);
}

/** A tensor's values as F32 bytes (exact from F16 and BF16). */
export async function f32Bytes(t: TensorInfo): Promise<Uint8Array> {
  const raw = await tensorBytes(t);
  if (t.dtype === "f32") return raw;
  return new Uint8Array(Float32Array.from(decodeWeights(raw, t.dtype)).buffer);
}

/** Transpose a row-major [rows, cols] matrix of `elemBytes`-byte elements. */
export function transpose(
  bytes: Uint8Array,
  rows: number,
  cols: number,
  elemBytes: 2 | 4,
): Uint8Array {
  const out = new Uint8Array(bytes.length);
  if (elemBytes === 2) {
    const src = new Uint16Array(bytes.buffer, bytes.byteOffset, rows * cols);
    const dst = new Uint16Array(out.buffer);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) dst[c * rows + r] = src[r * cols + c]!;
    }
  } else {
    const src = new Uint32Array(bytes.buffer, bytes.byteOffset, rows * cols);
    const dst = new Uint32Array(out.buffer);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) dst[c * rows + r] = src[r * cols + c]!;
    }
  }
  return out;
}

/**
 * The folder a converted copy of `dir` lives in: `.cache/kiln-bench/peers/<name>-<hash>/`, the
 * hash over the folder's absolute path and its weight files' sizes and times, so a changed
 * checkpoint is converted again.
 */
export async function cacheDir(dir: string): Promise<string> {
  const abs = await Deno.realPath(dir);
  let stamp = abs;
  for await (const e of Deno.readDir(abs)) {
    if (!e.name.endsWith(".safetensors") && e.name !== "config.json") continue;
    const st = await Deno.stat(`${abs}/${e.name}`);
    stamp += `|${e.name}:${st.size}:${st.mtime?.getTime()}`;
  }
  const hash = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(stamp)),
  );
  const hex = [...hash.slice(0, 6)].map((b) => b.toString(16).padStart(2, "0"))
    .join("");
  const root = new URL("../../.cache/kiln-bench/peers/", import.meta.url).pathname;
  const out = `${root}${abs.split("/").pop()}-${hex}`;
  await Deno.mkdir(out, { recursive: true });
  return out;
}

/** A short hash of source files (the converters), so a changed converter converts again. */
export async function sourceHash(files: readonly URL[]): Promise<string> {
  let text = "";
  for (const f of files) text += await Deno.readTextFile(f);
  const hash = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  return [...hash.slice(0, 4)].map((b) => b.toString(16).padStart(2, "0")).join(
    "",
  );
}

/** Run `make` to produce `path` unless it already exists (written to a temp name, then renamed). */
export async function cached(
  path: string,
  make: (tmp: string) => Promise<void>,
): Promise<string> {
  try {
    await Deno.stat(path);
    return path;
  } catch {
    // not there yet
  }
  const tmp = `${path}.tmp${Deno.pid}`;
  await make(tmp);
  await Deno.rename(tmp, path);
  return path;
}
