/**
 * gpt-oss on `test/fixtures/families/gpt-oss` (2 layers, window 8 on layer 0, sinks, YaRN over an
 * original context of 32, q/k/v/o biases, 4 experts top-2 with a router bias, clamped-SwiGLU
 * experts with biases; the HF folder's experts MXFP4 blocks/scales as released checkpoints hold
 * them): the HF folder, the F32 GGUF and llama.cpp's own MXFP4_MOE quantization of it all load
 * through `openCheckpoint` to one config and (for the experts) the same values bit for bit; the
 * bf16 fused layout, built here from the MXFP4 one, reads the same; Kiln's float64 reference
 * agrees with llama.cpp's logits on each file; each feature turned off moves the logits; bad
 * config values are refused naming the key; and the GPU forward matches the reference on both
 * kernel paths (F32 and MXFP4).
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { encodeWeights } from "../../gpu/dtype.ts";
import {
  type Ablation,
  argmaxAgreement,
  checkAblations,
  familyFixture,
  familyFixtureTests,
  gpuMatchesReference,
  loadFixture,
  maxAbsDiff,
} from "../../../test/support/family_fixture.ts";
import { type Checkpoint, openCheckpoint } from "../checkpoint.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../convert/convert.ts";
import { type ModelConfig, parseConfig } from "../config.ts";
import { ReferenceModel } from "../../reference/model.ts";
import { type ByteTensorInfo, readSafetensorsHeader } from "../../formats/safetensors.ts";
import { fileListFiles } from "../../formats/source.ts";
import { tensorValues } from "../../reference/tensor_values.ts";
import type { ModelWeights, WeightInfo } from "../weights.ts";
import { archOf, type LayerStep } from "./mod.ts";

const FIXTURE = familyFixture("gpt-oss");
const DIR = new URL("../../../test/fixtures/families/gpt-oss/", import.meta.url);
const TOKENS = FIXTURE.manifest.tokens;
/** Measured 5.2e-5 (llama.cpp computes in float32); a wrong convention costs 0.1 or more. */
const LLAMA_CPP_TOL = 2e-4;

const read = (name: string) => Deno.readFileSync(new URL(name, DIR));
const file = (name: string) => new File([read(name)], name.split("/").pop()!);
const mxfp4Gguf = () => openCheckpoint(fileListFiles([file("model.mxfp4_moe.gguf")]));
/** llama.cpp's logits on its own MXFP4_MOE file, one row per position. */
function mxfp4Logits(): Float32Array[] {
  const raw = read("logits.mxfp4_moe.f32");
  const all = new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
  return TOKENS.map((_, t) => all.subarray(t * 259, (t + 1) * 259));
}

/** Every expert tensor of `w` (by layer, expert and role) as float64 values (-0 read as 0). */
async function expertValues(w: ModelWeights<WeightInfo>): Promise<Map<string, Float64Array>> {
  const out = new Map<string, Float64Array>();
  for (const [l, layer] of w.layers.entries()) {
    for (const [e, expert] of (layer.experts ?? []).entries()) {
      for (const [role, t] of Object.entries(expert)) {
        out.set(`${l}.${e}.${role}`, (await tensorValues(t)).map((v) => v + 0));
      }
    }
  }
  return out;
}

Deno.test("gpt-oss: HF (MXFP4 experts), F32 GGUF and llama.cpp's MXFP4 GGUF load alike", async () => {
  const hf = await FIXTURE.hf(), gguf = await FIXTURE.gguf(), q = await mxfp4Gguf();
  const c = hf.config;
  deepStrictEqual(
    [c.arch, c.headDim, c.slidingWindow, c.slidingLayers, c.attentionBias, c.tieWordEmbeddings],
    ["gpt-oss", 16, 8, [true, false], true, false],
  );
  deepStrictEqual(c.moe, {
    experts: 4,
    topK: 2,
    expertIntermediateSize: 32,
    normTopK: true,
    swigluLimit: 7,
  });
  equal(c.ropeScaling.type, "yarn");
  const rest = (x: ModelConfig) => {
    const { dtype: _d, eosTokenIds: _e, bosTokenId: _b, ...more } = x;
    return more;
  };
  deepStrictEqual(rest(gguf.config), rest(c));
  deepStrictEqual(rest(q.config), rest(c));
  // The experts: MXFP4 in HF and in llama.cpp's file, F32 in the GGUF, equal values everywhere
  // (MXFP4 values are exact in F32, and llama.cpp's requantization of them is exact).
  const gate = (ck: Checkpoint) => ck.weights.layers[1]!.experts![3]!.gate;
  deepStrictEqual([gate(hf).dtype, gate(gguf).dtype, gate(q).dtype], ["MXFP4", "f32", "MXFP4"]);
  deepStrictEqual(gate(hf).shape, [32, 32]);
  const [a, b, d] = (await Promise.all([hf, gguf, q].map((ck) => expertValues(ck.weights)))) as [
    Map<string, Float64Array>,
    Map<string, Float64Array>,
    Map<string, Float64Array>,
  ];
  equal(a.size, 2 * 4 * 6);
  deepStrictEqual(a, b);
  deepStrictEqual(d, b);
  ok([...a.values()].some((v) => v.some((x) => x !== 0)));
});

/**
 * The fixture's HF folder with its experts in the unquantized fused layout (bf16, exact for
 * MXFP4 values): `gate_up_proj` [E, hidden, 2·ffn] input-major with gate/up columns interleaved,
 * `down_proj` [E, ffn, hidden]; every other tensor copied.
 */
async function bf16Folder(mxfp4: Checkpoint): Promise<File[]> {
  const src = new File([read("hf/model.safetensors")], "model.safetensors");
  const bytes = new Map<string, ByteTensorInfo>();
  const floats = await readSafetensorsHeader(
    {
      name: src.name,
      size: src.size,
      read: async (at, n) => new Uint8Array(await src.slice(at, at + n).arrayBuffer()),
    },
    bytes,
  );
  const header: Record<string, unknown> = {};
  const parts: Uint8Array[] = [];
  let offset = 0;
  const add = (name: string, dtype: string, shape: number[], data: Uint8Array) => {
    header[name] = { dtype, shape, data_offsets: [offset, offset += data.length] };
    parts.push(data);
  };
  for (const [name, t] of floats) {
    add(name, "F32", t.shape, (await t.source.read(t.offset, t.length)).slice());
  }
  const E = 4, H = 32, F = 32;
  for (const [l, layer] of mxfp4.weights.layers.entries()) {
    const gateUp = new Float64Array(E * H * 2 * F), down = new Float64Array(E * F * H);
    for (const [e, x] of layer.experts!.entries()) {
      const [g, u, dn] = await Promise.all([x.gate, x.up, x.down].map(tensorValues));
      for (let i = 0; i < F; i++) {
        for (let h = 0; h < H; h++) {
          gateUp[(e * H + h) * 2 * F + 2 * i] = g![i * H + h]!;
          gateUp[(e * H + h) * 2 * F + 2 * i + 1] = u![i * H + h]!;
          down[(e * F + i) * H + h] = dn![h * F + i]!;
        }
      }
    }
    const p = `model.layers.${l}.mlp.experts.`;
    add(`${p}gate_up_proj`, "BF16", [E, H, 2 * F], encodeWeights(gateUp, "bf16"));
    add(`${p}down_proj`, "BF16", [E, F, H], encodeWeights(down, "bf16"));
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const head = new Uint8Array(8);
  new DataView(head.buffer).setBigUint64(0, BigInt(json.length), true);
  const config = JSON.parse(new TextDecoder().decode(read("hf/config.json")));
  delete config.quantization_config;
  return [
    new File([JSON.stringify(config)], "config.json"),
    new File([head, json, ...parts] as BlobPart[], "model.safetensors"),
  ];
}

Deno.test("gpt-oss: the bf16 fused expert layout reads as the MXFP4 one", async () => {
  const mxfp4 = await FIXTURE.hf();
  const bf16 = await openCheckpoint(fileListFiles(await bf16Folder(mxfp4)));
  equal(bf16.weights.layers[0]!.experts![2]!.down.dtype, "bf16");
  deepStrictEqual(await expertValues(bf16.weights), await expertValues(mxfp4.weights));
  const logits = async (ck: Checkpoint) =>
    (await ReferenceModel.load(ck.config, ck.weights)).logits(TOKENS.slice(0, 12));
  equal(maxAbsDiff(await logits(bf16), await logits(mxfp4)), 0);
});

Deno.test("gpt-oss MXFP4_MOE (llama.cpp's quantization): float64 against llama.cpp's logits", async () => {
  const ck = await mxfp4Gguf();
  const llama = mxfp4Logits();
  const logits = async (testLlamaCppRounding: boolean) =>
    (await ReferenceModel.load(ck.config, ck.weights, { testLlamaCppRounding })).logits(TOKENS);
  // Exact arithmetic on the file's weights (its experts are the F32 file's bit for bit, above).
  const exact = await logits(false);
  // With the products' inputs rounded to Q8_0 blocks as llama.cpp's CPU build rounds them
  // against Q8_0 and MXFP4 weights.
  const rounded = await logits(true);
  const err = maxAbsDiff(rounded, llama), agree = argmaxAgreement(rounded, llama);
  const exactErr = maxAbsDiff(exact, llama);
  console.log(
    `  MXFP4_MOE: max |float64 - llama.cpp| ${err.toExponential(2)}, argmax ${agree}/50 with ` +
      `llama.cpp's activation rounding; ${exactErr.toFixed(2)}, argmax ` +
      `${argmaxAgreement(exact, llama)}/50 in exact arithmetic (the quantization moves the F32 ` +
      `logits by ${maxAbsDiff(exact, FIXTURE.llamaCpp).toFixed(1)})`,
  );
  ok(err < LLAMA_CPP_TOL, `${err}`);
  equal(agree, TOKENS.length);
  // The rounding is what separates them: exact arithmetic is far off (this fixture's clamps and
  // routing amplify 8-bit activations).
  ok(exactErr > 0.1, `${exactErr}`);
});

Deno.test("gpt-oss: Kiln's GGUF conversion keeps the MXFP4 experts and reads back the same model", async () => {
  const hf = await FIXTURE.hf();
  const parts: Uint8Array[] = [];
  const report = await writeHfAsGguf(
    await readHfCheckpoint(fileListFiles([file("hf/config.json"), file("hf/model.safetensors")])),
    (b) => void parts.push(b.slice()),
  );
  // 2 layers x 3 expert matrices.
  equal(report.types.MXFP4, 6);
  const ck = await openCheckpoint(fileListFiles([new File(parts as BlobPart[], "oss.gguf")]));
  const { dtype: _a, eosTokenIds: _b, bosTokenId: _c, ...back } = ck.config;
  const { dtype: _d, eosTokenIds: _e, bosTokenId: _f, ...want } = hf.config;
  deepStrictEqual(back, want);
  deepStrictEqual(await expertValues(ck.weights), await expertValues(hf.weights));
  const logits = async (c: Checkpoint) =>
    (await ReferenceModel.load(c.config, c.weights)).logits(TOKENS.slice(0, 12));
  equal(maxAbsDiff(await logits(ck), await logits(hf)), 0);
  // llama.cpp clamps gpt-oss's experts at 7: another limit cannot be written.
  const other = { ...hf, config: { ...hf.config, moe: { ...hf.config.moe!, swigluLimit: 5 } } };
  await rejects(writeHfAsGguf(other, () => {}), refused("config.swiglu_limit"));
});

/** The layer recipe with `f` applied to each step. */
const recipe = (c: ModelConfig, f: (s: LayerStep) => LayerStep) => archOf(c).layer.map(f);

/** `w` with each layer's router bias all zeros (or, with `experts`, the experts' biases gone). */
function withoutBiases(w: ModelWeights<WeightInfo>, experts: boolean): ModelWeights<WeightInfo> {
  const zeros = (t: WeightInfo): WeightInfo => {
    const bytes = new Uint8Array(t.shape.reduce((a, d) => a * d, 1) * 4);
    return {
      ...t,
      dtype: "f32",
      offset: 0,
      length: bytes.length,
      source: {
        name: "zeros",
        size: bytes.length,
        read: (at, n) => Promise.resolve(bytes.subarray(at, at + n)),
      },
    };
  };
  return {
    ...w,
    layers: w.layers.map((l) =>
      experts
        ? { ...l, experts: l.experts!.map(({ gate, up, down }) => ({ gate, up, down })) }
        : { ...l, routerBias: zeros(l.routerBias!) }
    ),
  };
}

Deno.test("gpt-oss: each feature, turned off in the float64 reference, moves the logits", async () => {
  const ck = await FIXTURE.hf();
  const c = ck.config;
  const load = (config: ModelConfig, steps = archOf(c).layer, w = ck.weights) =>
    ReferenceModel.load(config, w, { testRecipe: steps });
  const { slidingWindow: _w, slidingLayers: _l, ...noWindow } = c;
  // Each feature llama.cpp could turn off too (manifest.ablations) moves Kiln's logits as far.
  const llamaCpp: Record<string, string> = {
    "the attention sinks": "attention_sinks",
    "the sliding window": "sliding_window",
    "YaRN (plain RoPE)": "yarn",
    "the expert biases": "expert_biases",
    "the router bias": "router_bias",
  };
  const ablations: Record<string, Ablation> = {
    "the attention sinks": () =>
      load(c, recipe(c, (s) => s.op === "attention" ? { ...s, sinks: false } : s)),
    "the sliding window": () => load(noWindow),
    "YaRN (plain RoPE)": () => load({ ...c, ropeScaling: { type: "default" } }),
    "the SwiGLU clamp (limit 1e9)": () => load({ ...c, moe: { ...c.moe!, swigluLimit: 1e9 } }),
    "the expert biases": () => load(c, undefined, withoutBiases(ck.weights, true)),
    "the router bias": () => load(c, undefined, withoutBiases(ck.weights, false)),
  };
  const moved = await checkAblations(FIXTURE, ck, ablations);
  for (const [ours, theirs] of Object.entries(llamaCpp)) {
    const recorded = FIXTURE.manifest.ablations.find((a) => a.feature === theirs)!.max_abs_delta;
    ok(Math.abs(moved[ours]! - recorded) < 1e-3, `${ours}: ${moved[ours]} vs ${recorded}`);
  }
});

/** The fixture's config.json with `patch` applied (undefined deletes a key). */
function config(patch: Record<string, unknown>): Record<string, unknown> {
  const c = JSON.parse(new TextDecoder().decode(read("hf/config.json")));
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) delete c[k];
    else c[k] = v;
  }
  return c;
}

const refused = (key: string) => (e: unknown) =>
  e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(key);

Deno.test("gpt-oss: bad config values are refused naming the key", () => {
  parseConfig(config({}));
  const bad: [Record<string, unknown>, string][] = [
    [{ sliding_window: 1000 }, "config.sliding_window"],
    [{ layer_types: ["sliding_attention"] }, "config.layer_types"],
    [{ num_local_experts: undefined }, "config.num_local_experts"],
    [{ num_experts_per_tok: 5 }, "config.num_experts_per_tok"],
    [{ swiglu_limit: -7 }, "config.swiglu_limit"],
    [{ intermediate_size: 0 }, "config.intermediate_size"],
    [{ quantization_config: { quant_method: "gptq" } }, "config.quantization_config"],
    [{ rope_scaling: { rope_type: "yarn", factor: -8 } }, "config.rope_scaling.factor"],
  ];
  for (const [patch, key] of bad) throws(() => parseConfig(config(patch)), refused(key), key);
});

Deno.test("gpt-oss: malformed MXFP4 experts are refused naming the tensor", async () => {
  // The fixture's safetensors with one header entry rewritten.
  const st = read("hf/model.safetensors");
  const n = Number(new DataView(st.buffer, st.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(st.subarray(8, 8 + n)));
  const body = st.subarray(8 + n);
  const open = async (edit: (h: Record<string, { shape: number[] }>) => void) => {
    const h = structuredClone(header);
    edit(h);
    const json = new TextEncoder().encode(JSON.stringify(h));
    const len = new Uint8Array(8);
    new DataView(len.buffer).setBigUint64(0, BigInt(json.length), true);
    return await openCheckpoint(fileListFiles([
      file("hf/config.json"),
      new File([len, json, body] as BlobPart[], "model.safetensors"),
    ]));
  };
  const scales = "model.layers.1.mlp.experts.down_proj_scales";
  // The same bytes seen as [4, 16, 2] scales: not the config's [4, 32, 1].
  await rejects(open((h) => h[scales]!.shape = [4, 16, 2]), refused(scales));
  // A U8 tensor nothing reads.
  await rejects(
    open((h) => {
      h["model.layers.0.mlp.stray"] = h[scales]!;
      delete h[scales];
    }),
    refused("model.layers.0.mlp.stray"),
  );
});

// The HF folder and the F32 GGUF against llama.cpp in float64; on the GPU the F32 GGUF (also
// against llama.cpp) and Kiln's Q4_K_M conversion of the HF folder (MXFP4 experts kept).
familyFixtureTests("gpt-oss", LLAMA_CPP_TOL, "q4_k_m");

for (const paths of ["cpu", "gpu"] as const) {
  Deno.test(`gpt-oss MXFP4 (HF folder, llama.cpp's MXFP4_MOE GGUF) on the GPU (${paths} paths) matches float64`, async () => {
    const fx = await loadFixture("gpt-oss");
    await gpuMatchesReference(await FIXTURE.hf(), fx, paths);
    await gpuMatchesReference(await mxfp4Gguf(), fx, paths);
  });
}
