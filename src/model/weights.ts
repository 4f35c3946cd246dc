/**
 * The tensors a Llama/Mistral/Qwen2 checkpoint must hold, checked against the config before
 * any GPU allocation: a missing tensor, a wrong shape or an unsupported dtype is refused with
 * `InvalidArgument` naming the tensor.
 */
import { EngineError } from "../contract/errors.ts";
import type { ModelConfig } from "./config.ts";
import type { TensorInfo } from "./safetensors.ts";

export interface LayerWeights {
  inputNorm: TensorInfo;
  q: TensorInfo;
  k: TensorInfo;
  v: TensorInfo;
  o: TensorInfo;
  qBias?: TensorInfo;
  kBias?: TensorInfo;
  vBias?: TensorInfo;
  postNorm: TensorInfo;
  gate: TensorInfo;
  up: TensorInfo;
  down: TensorInfo;
}

export interface ModelWeights {
  embed: TensorInfo;
  layers: LayerWeights[];
  norm: TensorInfo;
  /** The LM head: `lm_head.weight`, or the embedding when tied. */
  lmHead: TensorInfo;
}

/** Check names, shapes and dtypes of every tensor the model uses. */
export function mapWeights(config: ModelConfig, tensors: Map<string, TensorInfo>): ModelWeights {
  const { hiddenSize: h, numHeads, numKvHeads, headDim, intermediateSize: inter, vocabSize } =
    config;
  const get = (name: string, shape: number[]): TensorInfo => {
    const t = tensors.get(name);
    if (t === undefined) {
      throw EngineError.invalidArgument(`tensor ${name}: missing from the checkpoint`);
    }
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      throw EngineError.invalidArgument(
        `tensor ${name}: shape [${t.shape}] does not match the config's [${shape}]`,
      );
    }
    return t;
  };
  const layers: LayerWeights[] = [];
  for (let i = 0; i < config.numLayers; i++) {
    const p = `model.layers.${i}.`;
    const layer: LayerWeights = {
      inputNorm: get(`${p}input_layernorm.weight`, [h]),
      q: get(`${p}self_attn.q_proj.weight`, [numHeads * headDim, h]),
      k: get(`${p}self_attn.k_proj.weight`, [numKvHeads * headDim, h]),
      v: get(`${p}self_attn.v_proj.weight`, [numKvHeads * headDim, h]),
      o: get(`${p}self_attn.o_proj.weight`, [h, numHeads * headDim]),
      postNorm: get(`${p}post_attention_layernorm.weight`, [h]),
      gate: get(`${p}mlp.gate_proj.weight`, [inter, h]),
      up: get(`${p}mlp.up_proj.weight`, [inter, h]),
      down: get(`${p}mlp.down_proj.weight`, [h, inter]),
    };
    if (config.attentionBias) {
      layer.qBias = get(`${p}self_attn.q_proj.bias`, [numHeads * headDim]);
      layer.kBias = get(`${p}self_attn.k_proj.bias`, [numKvHeads * headDim]);
      layer.vBias = get(`${p}self_attn.v_proj.bias`, [numKvHeads * headDim]);
      for (
        const [w, b] of [[layer.q, layer.qBias], [layer.k, layer.kBias], [
          layer.v,
          layer.vBias,
        ]] as const
      ) {
        if (w.dtype !== b.dtype) {
          throw EngineError.invalidArgument(
            `tensor ${b.name}: dtype ${b.dtype} differs from its weight's ${w.dtype}`,
          );
        }
      }
    }
    layers.push(layer);
  }
  const embed = get("model.embed_tokens.weight", [vocabSize, h]);
  const lmHead = config.tieWordEmbeddings ? embed : get("lm_head.weight", [vocabSize, h]);
  return { embed, layers, norm: get("model.norm.weight", [h]), lmHead };
}

/** Every tensor the model reads, once each, in a stable order. */
export function weightList(w: ModelWeights): TensorInfo[] {
  const out = new Set<TensorInfo>([w.embed]);
  for (const l of w.layers) {
    for (const t of Object.values(l)) out.add(t);
  }
  out.add(w.norm);
  out.add(w.lmHead);
  return [...out];
}

/** Refuse a model that cannot fit: a tensor beyond one binding, or a total beyond `budget`. */
export function checkFits(
  tensors: readonly Pick<TensorInfo, "name" | "length">[],
  limits: { maxStorageBufferBindingSize: number; maxBufferSize: number },
  budget = Infinity,
): void {
  const perBuffer = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  for (const t of tensors) {
    if (t.length > perBuffer) {
      throw new EngineError(
        "ResourceExhausted",
        `tensor ${t.name} needs ${t.length} bytes in one buffer; the device allows ${perBuffer}`,
      );
    }
  }
  const total = tensors.reduce((n, t) => n + t.length, 0);
  if (total > budget) {
    throw new EngineError(
      "ResourceExhausted",
      `the weights need ${total} bytes; the budget allows ${budget}`,
    );
  }
}
