import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import {
  archByGguf,
  archByHfArchitecture,
  archByModelType,
  type ArchDescription,
  archOf,
  ARCHS,
  expertEntryOfGguf,
  expertTensors,
  ggufTensorName,
  globalTensors,
  hfTensorName,
  layerTensors,
  type ShapeConfig,
} from "./mod.ts";

const C: ShapeConfig = {
  hiddenSize: 32,
  intermediateSize: 48,
  numLayers: 3,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 6,
  vocabSize: 50,
  attentionBias: true,
  tieWordEmbeddings: false,
};

/** Experts, for the families with a mixture-of-experts MLP. */
const MOE = { ...C, moe: { experts: 3, topK: 2, expertIntermediateSize: 16, normTopK: true } };

/** The products of a dense MLP (and those of each expert of a mixture of experts). */
const DENSE = ["gate", "up", "down"];

/** The roles a layer recipe reads: the products always, the norms its steps name. */
function required(a: ArchDescription): string[] {
  const has = (r: string) => a.tensors.layer.some((e) => e.role === r);
  const routed = (a.tensors.experts?.length ?? 0) > 0;
  const roles = [
    ...(has("qkv") ? ["qkv"] : ["q", "k", "v"]),
    "o",
    ...(routed ? ["router"] : [...(has("gateUp") ? ["gateUp"] : ["gate", "up"]), "down"]),
  ];
  for (const s of a.layer) {
    if (s.op === "attn_norm_qkv") roles.push("inputNorm");
    if (s.op === "qk_norm") roles.push("qNorm", "kNorm");
    if (s.op === "o_proj_residual" && s.postNorm) roles.push("attnOutNorm");
    if (s.op === "mlp" && s.preNorm !== false) roles.push("postNorm");
    if (s.op === "mlp" && s.postNorm) roles.push("mlpOutNorm");
    if (s.op === "moe_mlp") roles.push("postNorm");
    if (s.op === "moe_mlp" && s.biases) roles.push("routerBias");
    if (s.op === "attention" && s.sinks) roles.push("sinks");
  }
  return roles;
}

for (const a of ARCHS.values()) {
  Deno.test(`${a.name}: names find the family; HF and GGUF tensor names map both ways`, () => {
    equal(archOf({ arch: a.name }), a);
    for (const n of a.hf.architectures) equal(archByHfArchitecture(n), a);
    for (const n of a.hf.modelTypes) equal(archByModelType(n), a);
    for (const n of a.gguf.architectures) equal(archByGguf(n), a);
    ok(a.layer.length > 0);
    const roles = a.tensors.layer.filter((e) => e.when === undefined).map((e) => e.role);
    for (const r of required(a)) ok(roles.includes(r as never), `${a.name}: ${r}`);
    const experts = a.tensors.experts?.map((e) => e.role) ?? [];
    // Each expert's products, then (with the step's `biases`) their biases.
    const biased = a.layer.some((s) => s.op === "moe_mlp" && s.biases);
    const expertRoles = biased ? [...DENSE, "gateBias", "upBias", "downBias"] : DENSE;
    deepStrictEqual(experts.length > 0 ? experts : expertRoles, expertRoles);
    const all = [...globalTensors(a, C), ...[0, 2].flatMap((l) => layerTensors(a, MOE, l))];
    equal(new Set(all.map((t) => t.hf)).size, all.length);
    equal(new Set(all.map((t) => t.gguf)).size, all.length);
    for (const t of all) {
      equal(hfTensorName(a, t.gguf), t.hf);
      equal(ggufTensorName(a, t.hf), t.gguf);
    }
    // Each expert's tensor under HF's name; under llama.cpp's, the stack of them all.
    const each = [0, 2].flatMap((l) => expertTensors(a, MOE, l));
    equal(each.length, 2 * 3 * experts.length);
    for (const t of each) {
      equal(ggufTensorName(a, t.hf), t.gguf);
      equal(expertEntryOfGguf(a, t.gguf.replace(/^blk\.\d+\./, "")), t.entry);
    }
    equal(new Set(each.map((t) => t.hf)).size, each.length);
    equal(hfTensorName(a, "blk.01.attn_q.weight"), undefined);
    equal(hfTensorName(a, "rope_freqs.weight"), undefined);
    equal(ggufTensorName(a, "model.layers.0.toString"), undefined);
  });
}

Deno.test("optional tensors follow the config: biases, the untied head", () => {
  const a = archOf({ arch: "llama" });
  const names = (c: ShapeConfig) =>
    [...globalTensors(a, c), ...layerTensors(a, c, 0)].map((t) => t.gguf);
  const full = names(C);
  ok(full.includes("blk.0.attn_q.bias") && full.includes("output.weight"));
  const bare = names({ ...C, attentionBias: false, tieWordEmbeddings: true });
  deepStrictEqual(
    full.filter((n) => !bare.includes(n)).sort(),
    ["blk.0.attn_k.bias", "blk.0.attn_q.bias", "blk.0.attn_v.bias", "output.weight"],
  );
  const q = layerTensors(a, C, 1).find((t) => t.entry.role === "q")!;
  deepStrictEqual([q.hf, q.shape, q.heads], [
    "model.layers.1.self_attn.q_proj.weight",
    [24, 32],
    4,
  ]);
  const k = layerTensors(a, C, 1).find((t) => t.entry.role === "kBias")!;
  deepStrictEqual([k.shape, k.heads], [[12], 2]);
});

Deno.test("unknown names find no family; archOf refuses one", () => {
  equal(archByHfArchitecture("GPT2LMHeadModel"), undefined);
  equal(archByHfArchitecture("constructor"), undefined);
  equal(archByModelType(7), undefined);
  equal(archByGguf("toString"), undefined);
  let msg = "";
  try {
    archOf({ arch: "gpt2" });
  } catch (e) {
    msg = (e as Error).message;
  }
  ok(msg.includes("config.arch"), msg);
});
