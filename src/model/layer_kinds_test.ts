/**
 * A hybrid family's layer kinds read from an HF config and from GGUF metadata (LFM2's fixture),
 * and every value out of range refused as `InvalidArgument` naming its key, twice in a row and
 * a thousand times, with the good config still read after.
 */
import { deepStrictEqual, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { GgufMetadata } from "../formats/gguf/metadata.ts";
import { ARCHS } from "./arch/mod.ts";
import { parseConfig } from "./config.ts";
import { ggufLayerKinds, kvLayers, layerRecipe } from "./layer_kinds.ts";
import { sequenceStateBytes } from "./recurrent_state.ts";

const HF = JSON.parse(
  Deno.readTextFileSync(
    new URL("../../test/fixtures/families/lfm2/hf/config.json", import.meta.url),
  ),
);
const LFM2 = ARCHS.get("lfm2")!;

function refused(key: string, run: () => unknown): void {
  for (let i = 0; i < 2; i++) {
    throws(
      run,
      (e: unknown) =>
        e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(key),
    );
  }
}

Deno.test("layer kinds: an HF config's layer_types pick each layer's recipe and its state", () => {
  const c = parseConfig(HF);
  deepStrictEqual(c.layerKinds, ["short_conv", "attention", "short_conv", "short_conv"]);
  equal(c.convWidth, 3);
  equal(kvLayers(c), 1);
  equal(layerRecipe(c, 0)[0]!.op, "short_conv");
  equal(layerRecipe(c, 1)[0]!.op, "attn_norm_qkv");
  // Three convolution layers, each keeping 2 inputs of 32 channels, f32.
  equal(sequenceStateBytes(c), 3 * 2 * 32 * 4);
});

Deno.test("layer kinds: bad HF values are refused naming the key, repeatedly", () => {
  const bad: [string, Record<string, unknown>][] = [
    ["layer_types", { layer_types: ["conv", "full_attention"] }],
    ["layer_types", { layer_types: "conv" }],
    ["layer_types[2]", { layer_types: ["conv", "full_attention", "mamba", "conv"] }],
    ["layer_types[0]", { layer_types: [null, "conv", "conv", "conv"] }],
    ["conv_L_cache", { conv_L_cache: 1 }],
    ["conv_L_cache", { conv_L_cache: 9 }],
    ["conv_L_cache", { conv_L_cache: 2.5 }],
    ["conv_bias", { conv_bias: true }],
    ["tie_embedding", { tie_embedding: "yes" }],
  ];
  for (const [key, change] of bad) refused(key, () => parseConfig({ ...HF, ...change }));
  for (let i = 0; i < 1000; i++) {
    throws(() => parseConfig({ ...HF, conv_L_cache: 100 + i }), EngineError);
  }
  equal(parseConfig(HF).convWidth, 3);
});

Deno.test("layer kinds: GGUF's per-layer KV heads say which layers are recurrent; bad arrays are refused", () => {
  const meta = (over: Record<string, unknown>) =>
    new GgufMetadata({
      "lfm2.attention.head_count_kv": [0, 2, 0, 0],
      "lfm2.shortconv.l_cache": 3,
      ...over,
    });
  const good = ggufLayerKinds(meta({}), "lfm2.", LFM2, 4, 4);
  deepStrictEqual(good, {
    numKvHeads: 2,
    layerKinds: ["short_conv", "attention", "short_conv", "short_conv"],
    convWidth: 3,
  });
  const key = "lfm2.attention.head_count_kv";
  refused(key, () => ggufLayerKinds(meta({ [key]: [0, 2, 0] }), "lfm2.", LFM2, 4, 4));
  refused(key, () => ggufLayerKinds(meta({ [key]: [0, 2, 0, 4] }), "lfm2.", LFM2, 4, 4));
  refused(key, () => ggufLayerKinds(meta({ [key]: [0, 0, 0, 0] }), "lfm2.", LFM2, 4, 4));
  refused(key, () => ggufLayerKinds(meta({ [key]: [0, -1, 0, 0] }), "lfm2.", LFM2, 4, 4));
  const width = "lfm2.shortconv.l_cache";
  refused(width, () => ggufLayerKinds(meta({ [width]: 9 }), "lfm2.", LFM2, 4, 4));
  refused(width, () => ggufLayerKinds(meta({ [width]: undefined }), "lfm2.", LFM2, 4, 4));
  // A family without kinds reads one count as before.
  const plain = ARCHS.get("qwen3")!;
  deepStrictEqual(
    ggufLayerKinds(new GgufMetadata({ "qwen3.attention.head_count_kv": 2 }), "qwen3.", plain, 4, 4),
    { numKvHeads: 2 },
  );
});

Deno.test("layer kinds: Qwen3.5's flags and sizes, and their bad values refused by name", () => {
  const QWEN35 = ARCHS.get("qwen35")!;
  const meta = (over: Record<string, unknown>) =>
    new GgufMetadata(Object.fromEntries(
      Object.entries({
        "qwen35.attention.head_count_kv": 2,
        "qwen35.attention.recurrent_layers": [true, true, true, false],
        "qwen35.ssm.conv_kernel": 4,
        "qwen35.ssm.state_size": 8,
        "qwen35.ssm.group_count": 2,
        "qwen35.ssm.time_step_rank": 4,
        "qwen35.ssm.inner_size": 32,
        ...over,
      }).filter(([, v]) => v !== undefined),
    ));
  const good = ggufLayerKinds(meta({}), "qwen35.", QWEN35, 4, 4);
  deepStrictEqual(good.layerKinds, ["delta_net", "delta_net", "delta_net", "attention"]);
  deepStrictEqual(good.delta, { kHeads: 2, kDim: 8, vHeads: 4, vDim: 8, headMap: "tiled" });
  // Without the flags, every fourth layer is attention (full_attention_interval, default 4).
  const byInterval = ggufLayerKinds(
    meta({ "qwen35.attention.recurrent_layers": undefined, "qwen35.full_attention_interval": 2 }),
    "qwen35.",
    QWEN35,
    4,
    4,
  );
  deepStrictEqual(byInterval.layerKinds, ["delta_net", "attention", "delta_net", "attention"]);
  const flags = "qwen35.attention.recurrent_layers";
  refused(flags, () => ggufLayerKinds(meta({ [flags]: [true, false] }), "qwen35.", QWEN35, 4, 4));
  refused(flags, () => ggufLayerKinds(meta({ [flags]: [1, 1, 1, 0] }), "qwen35.", QWEN35, 4, 4));
  refused(
    flags,
    () => ggufLayerKinds(meta({ [flags]: [true, true, true, true] }), "qwen35.", QWEN35, 4, 4),
  );
  const dim = "qwen35.ssm.state_size";
  refused(dim, () => ggufLayerKinds(meta({ [dim]: 129 }), "qwen35.", QWEN35, 4, 4));
  const rank = "qwen35.ssm.time_step_rank";
  refused(
    rank,
    () => ggufLayerKinds(meta({ [rank]: 3, "qwen35.ssm.inner_size": 24 }), "qwen35.", QWEN35, 4, 4),
  );
  const hf = JSON.parse(
    Deno.readTextFileSync(
      new URL("../../test/fixtures/families/qwen35/hf/config.json", import.meta.url),
    ),
  );
  equal(parseConfig(hf).delta?.vHeads, 4);
  refused("attn_output_gate", () => parseConfig({ ...hf, attn_output_gate: false }));
  refused("linear_key_head_dim", () => parseConfig({ ...hf, linear_key_head_dim: 200 }));
  refused("linear_num_value_heads", () => parseConfig({ ...hf, linear_num_value_heads: 3 }));
  refused(
    "layer_types[1]",
    () =>
      parseConfig({
        ...hf,
        layer_types: ["linear_attention", "sliding", "linear_attention", "full_attention"],
      }),
  );
  refused(
    "rope_parameters.mrope_section",
    () =>
      parseConfig({ ...hf, rope_parameters: { ...hf.rope_parameters, mrope_section: [2, 2, 2] } }),
  );
});
