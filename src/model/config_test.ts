import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { parseConfig } from "./config.ts";
import { MODELS } from "../../test/support/models.ts";

const read = async (name: string) =>
  JSON.parse(
    await Deno.readTextFile(new URL("config.json", MODELS.find((m) => m.name === name)!.dir)),
  );

function refused(config: unknown, key: string): void {
  throws(() => parseConfig(config), (e: unknown) => {
    ok(e instanceof EngineError, String(e));
    equal(e.type, "InvalidArgument");
    ok(e.message.includes(key), `${e.message} should name ${key}`);
    return true;
  });
}

Deno.test("fixture configs: GQA llama, tied qwen2 with biases and derived head_dim, MQA bf16", async () => {
  const llama = parseConfig(await read("llama-gqa-f32"));
  equal(llama.arch, "llama");
  equal(llama.headDim, 16);
  equal(llama.numKvHeads, 2);
  equal(llama.tieWordEmbeddings, false);
  equal(llama.attentionBias, false);
  equal(llama.dtype, "f32");
  const qwen = parseConfig(await read("qwen2-bias-tied-f16"));
  equal(qwen.arch, "qwen2");
  equal(qwen.headDim, 96 / 6, "derived from hidden / heads");
  equal(qwen.attentionBias, true);
  equal(qwen.tieWordEmbeddings, true);
  equal(qwen.ropeTheta, 1e6);
  const mqa = parseConfig(await read("llama-mqa-bf16"));
  equal(mqa.headDim, 32, "explicit head_dim differs from hidden / heads");
  equal(mqa.numKvHeads, 1);
  equal(mqa.dtype, "bf16");
  deepStrictEqual(mqa.eosTokenIds, [2]);
});

Deno.test("RoPE settings read in both forms: rope_parameters and rope_theta + rope_scaling", async () => {
  const base = await read("llama-gqa-f32");
  delete base.rope_parameters;
  const legacy = parseConfig({
    ...base,
    rope_theta: 500000,
    rope_scaling: { type: "linear", factor: 2 },
  });
  equal(legacy.ropeTheta, 500000);
  deepStrictEqual(legacy.ropeScaling, { type: "linear", factor: 2 });
  const llama3 = parseConfig({
    ...base,
    rope_theta: 500000,
    rope_scaling: {
      rope_type: "llama3",
      factor: 8,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 8192,
    },
  });
  equal(llama3.ropeScaling.type, "llama3");
  const v5 = parseConfig({
    ...base,
    rope_parameters: { rope_theta: 1234, rope_type: "linear", factor: 4 },
  });
  equal(v5.ropeTheta, 1234);
  deepStrictEqual(v5.ropeScaling, { type: "linear", factor: 4 });
  equal(parseConfig({ ...base, rope_scaling: null }).ropeScaling.type, "default");
  deepStrictEqual(
    parseConfig({ ...base, rope_scaling: { type: "dynamic", factor: 2 } }).ropeScaling,
    { type: "dynamic", factor: 2 },
  );
  deepStrictEqual(parseConfig({ ...base, eos_token_id: [2, 7] }).eosTokenIds, [2, 7]);
});

Deno.test("YaRN: gpt-oss's keys, the defaults, and the attention factor given or derived", async () => {
  const base = { ...await read("llama-gqa-f32"), max_position_embeddings: 131072 };
  delete base.rope_parameters;
  const gptOss = {
    rope_type: "yarn",
    factor: 32,
    beta_fast: 32,
    beta_slow: 1,
    original_max_position_embeddings: 4096,
    truncate: false,
  };
  const c = parseConfig({ ...base, rope_theta: 150000, rope_scaling: gptOss });
  equal(c.ropeTheta, 150000);
  deepStrictEqual(c.ropeScaling, {
    type: "yarn",
    factor: 32,
    originalMaxPositionEmbeddings: 4096,
    betaFast: 32,
    betaSlow: 1,
    truncate: false,
    attentionFactor: 0.1 * Math.log(32) + 1,
  });
  // Qwen's form: only the factor and the original context; betas 32 / 1, truncated.
  const qwen = parseConfig({
    ...base,
    rope_scaling: { type: "yarn", factor: 4, original_max_position_embeddings: 32768 },
  }).ropeScaling;
  deepStrictEqual(qwen, {
    type: "yarn",
    factor: 4,
    originalMaxPositionEmbeddings: 32768,
    betaFast: 32,
    betaSlow: 1,
    truncate: true,
    attentionFactor: 0.1 * Math.log(4) + 1,
  });
  const given = parseConfig({ ...base, rope_scaling: { ...gptOss, attention_factor: 1.5 } });
  equal((given.ropeScaling as { attentionFactor: number }).attentionFactor, 1.5);
  // DeepSeek's mscale / mscale_all_dim: the ratio of the two factors (1 when equal).
  const ds = (mscale: number, all: number) =>
    (parseConfig({ ...base, rope_scaling: { ...gptOss, mscale, mscale_all_dim: all } })
      .ropeScaling as { attentionFactor: number }).attentionFactor;
  equal(ds(0.707, 0.707), 1);
  equal(ds(1, 0.5), (0.1 * Math.log(32) + 1) / (0.05 * Math.log(32) + 1));
  // No factor: the ratio of the context to the original one; no original: the context.
  const derived = parseConfig({
    ...base,
    rope_scaling: { rope_type: "yarn", original_max_position_embeddings: 32768 },
  }).ropeScaling as { factor: number };
  equal(derived.factor, 4);
  const plain = parseConfig({ ...base, rope_scaling: { rope_type: "yarn", factor: 2 } })
    .ropeScaling as { originalMaxPositionEmbeddings: number };
  equal(plain.originalMaxPositionEmbeddings, 131072);
});

Deno.test("unsupported configs are refused naming the key", async () => {
  const base = await read("llama-gqa-f32");
  refused({ ...base, architectures: ["GPT2LMHeadModel"] }, "architectures");
  refused({ ...base, architectures: undefined, model_type: "gpt2" }, "model_type");
  refused(
    { ...base, rope_parameters: { rope_theta: 1e4, rope_type: "ntk-by-parts", factor: 4 } },
    "rope_parameters.rope_type",
  );
  const yarn = { rope_theta: 1e4, rope_type: "yarn", factor: 4 };
  refused({ ...base, rope_parameters: { ...yarn, truncate: "no" } }, "rope_parameters.truncate");
  refused({ ...base, rope_parameters: { ...yarn, beta_fast: -1 } }, "rope_parameters.beta_fast");
  refused({ ...base, rope_parameters: { ...yarn, factor: 0 } }, "rope_parameters.factor");
  refused(
    { ...base, rope_parameters: { ...yarn, original_max_position_embeddings: 1.5 } },
    "rope_parameters.original_max_position_embeddings",
  );
  refused(
    { ...base, rope_parameters: undefined, rope_scaling: { type: "dynamic" } },
    "factor",
  );
  refused({ ...base, rope_parameters: { rope_theta: 1e4, rope_type: "linear" } }, "factor");
  refused({ ...base, mlp_bias: true }, "mlp_bias");
  refused({ ...base, hidden_act: "gelu" }, "hidden_act");
  refused({ ...base, num_key_value_heads: 3 }, "num_key_value_heads");
  refused({ ...base, hidden_size: "64" }, "hidden_size");
  refused({ ...base, vocab_size: undefined }, "vocab_size");
  refused({ ...base, torch_dtype: "int8" }, "torch_dtype");
  refused({ ...base, quantization_config: { bits: 4 } }, "quantization_config");
  const mistral = { ...base, architectures: ["MistralForCausalLM"], max_position_embeddings: 512 };
  refused({ ...mistral, sliding_window: 513 }, "sliding_window");
  refused({ ...mistral, sliding_window: 0 }, "sliding_window");
  refused({ ...mistral, sliding_window: 2.5 }, "sliding_window");
  refused({ ...mistral, sliding_window: 8, layer_types: ["sliding_attention"] }, "layer_types");
  refused(
    { ...mistral, sliding_window: 8, layer_types: ["sliding_attention", "chunked_attention"] },
    "layer_types[1]",
  );
  refused({ ...mistral, sliding_window: 8, sliding_window_pattern: 0 }, "sliding_window_pattern");
  refused({ ...base, query_pre_attn_scalar: -1 }, "query_pre_attn_scalar");
  refused({ ...base, attn_logit_softcapping: 0 }, "attn_logit_softcapping");
  refused({ ...base, final_logit_softcapping: "30" }, "final_logit_softcapping");
  refused({ ...base, hidden_act: "gelu_pytorch_tanh" }, "hidden_act");
  refused({ ...base, architectures: ["Gemma2ForCausalLM"], hidden_act: "silu" }, "hidden_act");
  refused("{not json", "config.json");
});

Deno.test("sliding windows: Mistral's on every layer, Qwen2's only with use_sliding_window", async () => {
  const base = { ...await read("llama-gqa-f32"), max_position_embeddings: 512 };
  const mistral = parseConfig({
    ...base,
    architectures: ["MistralForCausalLM"],
    sliding_window: 128,
  });
  equal(mistral.slidingWindow, 128);
  deepStrictEqual(mistral.slidingLayers, Array(mistral.numLayers).fill(true));
  equal(
    parseConfig({ ...base, architectures: ["MistralForCausalLM"], sliding_window: null })
      .slidingWindow,
    undefined,
  );
  const qwen = { ...base, architectures: ["Qwen2ForCausalLM"], sliding_window: 64 };
  equal(parseConfig(qwen).slidingWindow, undefined);
  const windowed = parseConfig({ ...qwen, use_sliding_window: true, max_window_layers: 1 });
  equal(windowed.slidingWindow, 64);
  deepStrictEqual(
    windowed.slidingLayers,
    Array.from({ length: windowed.numLayers }, (_, i) => i >= 1),
  );
  refused({ ...qwen, use_sliding_window: true, max_window_layers: -1 }, "max_window_layers");
  const layers = parseConfig({
    ...base,
    architectures: ["MistralForCausalLM"],
    sliding_window: 16,
    layer_types: Array.from(
      { length: base.num_hidden_layers },
      (_, i) => i === 0 ? "full_attention" : "sliding_attention",
    ),
  }).slidingLayers;
  deepStrictEqual(layers, Array.from({ length: base.num_hidden_layers }, (_, i) => i > 0));
});

Deno.test("Gemma configs: tied unless told otherwise, the GELU-tanh activation required", async () => {
  const base = await read("llama-gqa-f32");
  const gemma = {
    ...base,
    architectures: ["Gemma2ForCausalLM"],
    hidden_activation: "gelu_pytorch_tanh",
    tie_word_embeddings: undefined,
  };
  equal(parseConfig(gemma).tieWordEmbeddings, true);
  equal(parseConfig({ ...gemma, tie_word_embeddings: false }).tieWordEmbeddings, false);
  equal(parseConfig({ ...base, tie_word_embeddings: undefined }).tieWordEmbeddings, false);
  refused({ ...gemma, hidden_activation: "silu" }, "hidden_activation");
});
