/**
 * A GGUF model from a path, a `File`/`Blob` or a URL, single-file or split
 * (`NAME-00001-of-0000N.gguf`, tensors spread over the splits): every header read and checked,
 * the config from the metadata, the tensors under HF names and checked against the config.
 */
import { EngineError } from "../../contract/errors.ts";
import { archOf } from "../arch/mod.ts";
import type { ModelConfig } from "../config.ts";
import { ropeInvFreq, type RopeScaling } from "../rope.ts";
import {
  type ByteSource,
  fileListFiles,
  missingFile,
  type ModelFiles,
} from "../../formats/source.ts";
import { urlSource } from "../../formats/url_source.ts";
import { mapWeights } from "../weights.ts";
import { ggufConfig } from "./config.ts";
import { type GgufFile, readGgufFile } from "../../formats/gguf/header.ts";
import { parseGgufShardFilename } from "../../formats/gguf/lib.ts";
import type { GgufMetadata } from "../../formats/gguf/metadata.ts";
import { type GgufTensorInfo, hfTensors } from "./tensors.ts";

export interface GgufModel {
  /** The first file's name. */
  location: string;
  files: GgufFile[];
  /** The first file's metadata (the one that holds the model's keys). */
  metadata: GgufMetadata;
  config: ModelConfig;
  /** Every tensor under its HF name (unmapped ones, like `rope_freqs.weight`, under GGUF's). */
  tensors: Map<string, GgufTensorInfo>;
  /** q/k rows are in llama.cpp's interleaved order (each such tensor carries `ropeInterleave`). */
  ropeInterleaved: boolean;
}

/** Opens a file by the name `openGguf` derives (a path, a URL or a file name). */
export type OpenSource = (name: string) => Promise<ByteSource | undefined>;

const MAX_SPLITS = 1000;

/** The names of every split of the model whose first file is `first`. */
export function splitNames(first: string): string[] {
  const shard = parseGgufShardFilename(first);
  if (!shard) return [first];
  const total = Number(shard.total);
  if (Number(shard.shard) !== 1) {
    throw EngineError.invalidArgument(
      `${first}: open the first split (-00001-of-${shard.total}.gguf)`,
    );
  }
  if (total < 1 || total > MAX_SPLITS) {
    throw EngineError.invalidArgument(`${first}: ${total} splits (1 to ${MAX_SPLITS} supported)`);
  }
  const pad = (n: number) => String(n).padStart(5, "0");
  return Array.from(
    { length: total },
    (_, i) => `${shard.prefix}-${pad(i + 1)}-of-${shard.total}.gguf`,
  );
}

function checkSplits(files: GgufFile[]): void {
  const n = files.length;
  files.forEach((f, i) => {
    const m = f.metadata;
    const count = m.uint("split.count", n === 1 ? 1 : 0);
    if (count !== n) {
      throw m.refuse("split.count", `${count} splits, but the file names give ${n}`);
    }
    if (m.uint("split.no", i) !== i) {
      throw m.refuse("split.no", `${m.uint("split.no")}, expected ${i} from the file name`);
    }
  });
  const first = files[0]!.metadata;
  const total = files.reduce((s, f) => s + f.tensors.length, 0);
  if (first.has("split.tensors.count") && first.uint("split.tensors.count") !== total) {
    throw first.refuse(
      "split.tensors.count",
      `${first.uint("split.tensors.count")} tensors, but the splits hold ${total}`,
    );
  }
}

/**
 * Llama 3 GGUFs carry RoPE scaling as per-dimension frequency divisors (`rope_freqs.weight`)
 * instead of its parameters. Recover the `llama3` parameters that give exactly these divisors
 * (factor = the largest divisor; Llama 3.x's low/high frequency factors 1 and 4 and original
 * context 8192, or the file's `rope.scaling.original_context_length`), so that the config reads
 * as its HF source's; undefined when no such parameters give them.
 */
export function llama3FromFreqFactors(
  divisors: Float32Array,
  headDim: number,
  theta: number,
  originalContext?: number,
): RopeScaling | undefined {
  const base = ropeInvFreq(headDim, theta);
  const top = divisors.indexOf(Math.max(...divisors));
  const olds = [...new Set([originalContext ?? 8192, 8192])];
  for (const old of olds) {
    // The factor from the most-scaled dimension: fully scaled (divisor = factor) beyond the
    // low-frequency wavelength, else blended with weight s (divisor = 1 / ((1-s)/factor + s)).
    const d = divisors[top] ?? 1;
    const s = Math.min(1, Math.max(0, (old * base[top]! / (2 * Math.PI) - 1) / (4 - 1)));
    const factor = Number((s === 0 ? d : (1 - s) / (1 / d - s)).toPrecision(6));
    if (!(factor >= 1) || !Number.isFinite(factor)) continue;
    const scaling: RopeScaling = {
      type: "llama3",
      factor,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositionEmbeddings: old,
    };
    const inv = ropeInvFreq(headDim, theta, scaling);
    const ok = divisors.length === headDim / 2 &&
      base.every((b, i) => Math.abs(b / divisors[i]! - inv[i]!) <= 1e-5 * b);
    if (ok) return scaling;
  }
  return undefined;
}

async function ropeFromFreqs(
  config: ModelConfig,
  meta: GgufMetadata,
  t: GgufTensorInfo,
): Promise<RopeScaling> {
  if (t.dtype !== "f32" || t.length !== config.headDim * 2) {
    throw EngineError.invalidArgument(
      `tensor rope_freqs.weight: expected ${
        config.headDim / 2
      } f32 values, got ${t.dtype} [${t.shape}]`,
    );
  }
  const bytes = await t.source.read(t.offset, t.length);
  const divisors = new Float32Array(bytes.slice().buffer);
  const bad = divisors.findIndex((d) => !(d > 0 && Number.isFinite(d)));
  if (bad >= 0) {
    throw EngineError.invalidArgument(
      `tensor rope_freqs.weight: factor ${bad} is ${divisors[bad]}, expected a positive number`,
    );
  }
  const key = `${meta.string("general.architecture")}.rope.scaling.original_context_length`;
  // Any other divisors are used as stored, as llama.cpp does (their parameters are unknown).
  return llama3FromFreqFactors(
    divisors,
    config.headDim,
    config.ropeTheta,
    meta.has(key) ? meta.count(key) : undefined,
  ) ?? { type: "factors", factors: [...divisors] };
}

/** One f32 RoPE factor tensor of `count` positive values. */
async function factorTensor(t: GgufTensorInfo, name: string, count: number): Promise<number[]> {
  if (t.dtype !== "f32" || t.length !== count * 4) {
    throw EngineError.invalidArgument(
      `tensor ${name}: expected ${count} f32 values, got ${t.dtype} [${t.shape}]`,
    );
  }
  const values = [...new Float32Array((await t.source.read(t.offset, t.length)).slice().buffer)];
  const bad = values.findIndex((d) => !(d > 0 && Number.isFinite(d)));
  if (bad >= 0) {
    throw EngineError.invalidArgument(
      `tensor ${name}: factor ${bad} is ${values[bad]}, expected a positive number`,
    );
  }
  return values;
}

/**
 * LongRoPE as llama.cpp takes it (Phi-3): `rope_factors_short.weight` and
 * `rope_factors_long.weight`, the original context `rope.scaling.original_context_length` and
 * the attention factor `rope.scaling.attn_factor` (1 when absent, as in llama.cpp).
 */
async function longRope(
  config: ModelConfig,
  meta: GgufMetadata,
  tensors: Map<string, GgufTensorInfo>,
): Promise<RopeScaling> {
  const names = ["rope_factors_short.weight", "rope_factors_long.weight"] as const;
  const [short, long] = names.map((n) => tensors.get(n));
  if (!short || !long) {
    throw EngineError.invalidArgument(`tensor ${names[short ? 1 : 0]}: missing beside the other`);
  }
  if (config.ropeScaling.type !== "default") {
    throw EngineError.invalidArgument(`tensor ${names[0]}: LongRoPE beside another RoPE scaling`);
  }
  const p = `${meta.string("general.architecture")}.rope.scaling.`;
  const half = (config.rotaryDim ?? config.headDim) / 2;
  return {
    type: "longrope",
    shortFactor: await factorTensor(short, names[0], half),
    longFactor: await factorTensor(long, names[1], half),
    originalMaxPositionEmbeddings: meta.count(
      `${p}original_context_length`,
      config.maxPositionEmbeddings,
    ),
    maxPositionEmbeddings: config.maxPositionEmbeddings,
    attentionFactor: meta.has(`${p}attn_factor`) ? meta.positive(`${p}attn_factor`) : 1,
  };
}

/** Read a GGUF model whose (first) file is `first`, opening every file through `open`. */
export async function openGguf(first: string, open: OpenSource): Promise<GgufModel> {
  const files: GgufFile[] = [];
  for (const name of splitNames(first)) {
    const src = await open(name);
    if (src === undefined) throw EngineError.invalidArgument(`${name}: no such GGUF file`);
    files.push(await readGgufFile(src));
  }
  checkSplits(files);
  const all = files.flatMap((f) => f.tensors);
  const metadata = files[0]!.metadata;
  const config = ggufConfig(metadata, new Set(all.map((t) => t.name)));
  const tensors = hfTensors(config, all);
  const freqs = tensors.get("rope_freqs.weight");
  if (freqs && archOf(config).gguf.ropeFreqs) {
    if (config.ropeScaling.type !== "default") {
      throw EngineError.invalidArgument(
        "tensor rope_freqs.weight: frequency factors beside another RoPE scaling",
      );
    }
    config.ropeScaling = await ropeFromFreqs(config, metadata, freqs);
  }
  if (tensors.has("rope_factors_short.weight") || tensors.has("rope_factors_long.weight")) {
    config.ropeScaling = await longRope(config, metadata, tensors);
  }
  // The same name and shape checks as a safetensors checkpoint.
  mapWeights(config, tensors);
  return {
    location: first,
    files,
    metadata,
    config,
    tensors,
    ropeInterleaved: [...tensors.values()].some((t) => t.ropeInterleave),
  };
}

/** The GGUF model `files` names (`files.gguf`), opening its splits through `files.open`. */
export function openGgufFiles(files: ModelFiles): Promise<GgufModel> {
  const first = files.gguf;
  if (first === undefined) {
    return Promise.reject(EngineError.invalidArgument(`${files.location}: not a GGUF model`));
  }
  return openGguf(first, async (name) => {
    const src = await files.open(name);
    // Every split is required: named as `files` describes an absent one where it can (for a
    // URL, the 404 or the HTML page that came in its place).
    if (src === undefined && files.describeMissing) throw missingFile(files, name);
    return src;
  });
}

/** A GGUF model from dropped or picked files: the `.gguf` among them, or its first split. */
export async function openGgufBlobs(files: Iterable<File>): Promise<GgufModel> {
  const list = fileListFiles(files);
  if (list.gguf === undefined) {
    throw EngineError.invalidArgument(
      "expected one .gguf file or the first of its splits, got none",
    );
  }
  return await openGgufFiles(list);
}

/** A GGUF model over HTTP(S) with Range requests (the URL of the file or its first split). */
export function openGgufUrl(url: string, fetchFn: typeof fetch = fetch): Promise<GgufModel> {
  return openGguf(url, (u) => urlSource(u, fetchFn));
}
