/**
 * A tiny random HF checkpoint (`config.json` + one F32 `model.safetensors`) of any family
 * `src/model/arch/` describes, built in memory from the description's tensor table: the same
 * table the loaders check, so a new family gets a test checkpoint with no code of its own.
 * Deterministic (`seeded`); embeddings ~U(-1, 1), matrices ~U(-`std`, `std`), norm weights
 * 1 ± 0.1, biases ± 0.1, and any role's values scaled by `scale[role]` (an expert's roles are
 * `gate`, `up`, `down`, like a dense MLP's). With `shape.moe`, the config has its experts' keys.
 */
import {
  ARCHS,
  expertTensors,
  globalTensors,
  layerTensors,
  type ResolvedTensor,
  type ShapeConfig,
} from "../../src/model/arch/mod.ts";
import { seeded } from "./kernel_harness.ts";

export interface TinyFamilyOptions {
  /** The family (`ModelConfig.arch`). */
  arch: string;
  /** Sizes and flags (`attentionBias`, `tieWordEmbeddings`). */
  shape: ShapeConfig;
  /** Half-width of the matrices' uniform values (default 0.3). */
  std?: number;
  /** Multipliers by tensor role (`qNorm: 3` makes every q norm weight 3x). */
  scale?: Readonly<Record<string, number>>;
  seed?: number;
  maxPositions?: number;
}

/** The checkpoint's files, and the config.json it holds. */
export function tinyFamilyFiles(o: TinyFamilyOptions): { files: File[]; config: object } {
  const a = ARCHS.get(o.arch);
  if (a === undefined) throw new Error(`no family ${o.arch}`);
  const c = o.shape, std = o.std ?? 0.3;
  const config = {
    architectures: [a.hf.architectures[0]],
    vocab_size: c.vocabSize,
    hidden_size: c.hiddenSize,
    intermediate_size: c.intermediateSize,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    num_key_value_heads: c.numKvHeads,
    head_dim: c.headDim,
    max_position_embeddings: o.maxPositions ?? 256,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    tie_word_embeddings: c.tieWordEmbeddings,
    attention_bias: c.attentionBias,
    torch_dtype: "float32",
    ...(c.moe
      ? {
        num_experts: c.moe.experts,
        num_experts_per_tok: c.moe.topK,
        moe_intermediate_size: c.moe.expertIntermediateSize,
        norm_topk_prob: c.moe.normTopK,
      }
      : {}),
  };
  const tensors: ResolvedTensor<string>[] = [...globalTensors(a, c)];
  for (let l = 0; l < c.numLayers; l++) {
    tensors.push(...layerTensors(a, c, l), ...expertTensors(a, c, l));
  }
  const header: Record<string, unknown> = {};
  const parts: Float32Array[] = [];
  let offset = 0, seed = o.seed ?? 1;
  for (const t of tensors) {
    const n = t.shape.reduce((x, y) => x * y, 1);
    const role = t.entry.role;
    const noise = seeded(seed++, n);
    const values = t.shape.length === 2
      ? noise.map((v) => v * (role === "embed" ? 1 : std))
      : /Norm$|^norm$/.test(role)
      ? noise.map((v) => 1 + 0.1 * v)
      : noise.map((v) => 0.1 * v);
    const k = o.scale?.[role] ?? 1;
    parts.push(Float32Array.from(values, (v) => v * k));
    header[t.hf] = { dtype: "F32", shape: t.shape, data_offsets: [offset, offset + 4 * n] };
    offset += 4 * n;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const head = new Uint8Array(8);
  new DataView(head.buffer).setBigUint64(0, BigInt(json.length), true);
  const weights = new File([head, json, ...parts] as BlobPart[], "model.safetensors");
  return { files: [new File([JSON.stringify(config)], "config.json"), weights], config };
}
