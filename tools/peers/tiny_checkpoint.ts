/**
 * Small random Llama/Qwen2 checkpoints (HF `config.json` + `model.safetensors`) for the peers'
 * tests and checks. Deterministic (mulberry32); matrices ~N(0, std²), embeddings ~N(0, 1).
 *
 *   deno run -A tools/peers/tiny_checkpoint.ts OUT [--arch llama|qwen2] [--layers 2]
 *     [--dtype f16|f32|bf16] [--vocab 49152] [--untied] [--shape smollm2|qwen2|tiny]
 */
import { encodeWeights, type WeightDtype } from "../../src/gpu/dtype.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";

export interface TinyOptions {
  arch?: "llama" | "qwen2";
  layers?: number;
  dtype?: WeightDtype;
  vocab?: number;
  tied?: boolean;
  /** hidden, heads, kv heads, head dim, intermediate. */
  dims?: [number, number, number, number, number];
  std?: number;
  seed?: number;
}

export const SHAPES: Record<string, [number, number, number, number, number]> = {
  smollm2: [576, 9, 3, 64, 1536],
  qwen2: [896, 14, 2, 64, 4864],
  tiny: [16, 4, 2, 4, 24],
};

function gaussian(seed: number): () => number {
  let s = seed | 0;
  const uniform = () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
}

/** Write a checkpoint to `dir`; returns its config. */
export async function writeTinyCheckpoint(
  dir: string,
  o: TinyOptions = {},
): Promise<Record<string, unknown>> {
  const arch = o.arch ?? "llama",
    layers = o.layers ?? 2,
    dtype = o.dtype ?? "f16";
  const vocab = o.vocab ?? 300, tied = o.tied ?? true, std = o.std ?? 0.06;
  const [h, nh, nkv, hd, inter] = o.dims ?? SHAPES.tiny!;
  const g = gaussian(o.seed ?? 1);
  const specs: [string, number[], () => number][] = [];
  const add = (name: string, shape: number[], f = () => g() * std) => specs.push([name, shape, f]);
  add("model.embed_tokens.weight", [vocab, h], g);
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    add(`${p}input_layernorm.weight`, [h], () => 1 + 0.1 * g());
    add(`${p}self_attn.q_proj.weight`, [nh * hd, h]);
    add(`${p}self_attn.k_proj.weight`, [nkv * hd, h]);
    add(`${p}self_attn.v_proj.weight`, [nkv * hd, h]);
    if (arch === "qwen2") {
      add(`${p}self_attn.q_proj.bias`, [nh * hd], () => 0.5 * g());
      add(`${p}self_attn.k_proj.bias`, [nkv * hd], () => 0.5 * g());
      add(`${p}self_attn.v_proj.bias`, [nkv * hd], () => 0.1 * g());
    }
    add(`${p}self_attn.o_proj.weight`, [h, nh * hd]);
    add(`${p}post_attention_layernorm.weight`, [h], () => 1 + 0.1 * g());
    add(`${p}mlp.gate_proj.weight`, [inter, h]);
    add(`${p}mlp.up_proj.weight`, [inter, h]);
    add(`${p}mlp.down_proj.weight`, [h, inter]);
  }
  add("model.norm.weight", [h], () => 1 + 0.1 * g());
  if (!tied) add("lm_head.weight", [vocab, h]);

  const header: Record<string, unknown> = {};
  const data: Uint8Array[] = [];
  let offset = 0;
  const code = { f16: "F16", f32: "F32", bf16: "BF16" }[dtype];
  for (const [name, shape, f] of specs) {
    const values = Float64Array.from({
      length: shape.reduce((a, d) => a * d, 1),
    }, f);
    const bytes = encodeWeights(values, dtype);
    header[name] = {
      dtype: code,
      shape,
      data_offsets: [offset, offset + bytes.length],
    };
    offset += bytes.length;
    data.push(bytes);
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - json.length % 8) % 8);
  const prefix = new Uint8Array(8);
  new DataView(prefix.buffer).setBigUint64(0, BigInt(json.length), true);
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeFile(
    `${dir}/model.safetensors`,
    ReadableStream.from([prefix, new TextEncoder().encode(json), ...data]),
  );
  const config = {
    architectures: [arch === "qwen2" ? "Qwen2ForCausalLM" : "LlamaForCausalLM"],
    model_type: arch,
    hidden_size: h,
    intermediate_size: inter,
    num_hidden_layers: layers,
    num_attention_heads: nh,
    num_key_value_heads: nkv,
    head_dim: hd,
    vocab_size: vocab,
    max_position_embeddings: 2048,
    rms_norm_eps: 1e-5,
    rope_theta: arch === "qwen2" ? 1000000 : 100000,
    tie_word_embeddings: tied,
    torch_dtype: { f16: "float16", f32: "float32", bf16: "bfloat16" }[dtype],
    bos_token_id: 1,
    eos_token_id: 2,
    hidden_act: "silu",
  };
  await Deno.writeTextFile(
    `${dir}/config.json`,
    JSON.stringify(config, null, 2),
  );
  return config;
}

if (import.meta.main) {
  const { flags, args } = runCli({
    name: "tiny_checkpoint",
    command: "deno run -A tools/peers/tiny_checkpoint.ts",
    about: "A small random Llama or Qwen2 checkpoint folder (config.json, model.safetensors).",
    flags: {
      arch: {
        type: "enum",
        choices: ["llama", "qwen2"],
        default: "llama",
        help: "architecture",
      },
      layers: { type: "integer", min: 1, default: 2, help: "decoder layers" },
      dtype: {
        type: "enum",
        choices: ["f16", "f32", "bf16"],
        default: "f16",
        help: "weights",
      },
      vocab: { type: "integer", min: 3, default: 300, help: "vocabulary size" },
      untied: {
        type: "boolean",
        help: "an LM head of its own (default: tied to the embedding)",
      },
      shape: {
        type: "enum",
        choices: Object.keys(SHAPES),
        default: "tiny",
        help: "hidden size, heads, KV heads, head size, FFN size",
      },
    },
    args: { usage: "OUT", min: 1, max: 1, help: "the folder to write" },
  });
  const out = args[0]!;
  await writeTinyCheckpoint(out, {
    arch: flags.arch,
    layers: flags.layers,
    dtype: flags.dtype,
    vocab: flags.vocab,
    tied: !flags.untied,
    dims: SHAPES[flags.shape]!,
  });
  console.error(`wrote ${out}`);
}
