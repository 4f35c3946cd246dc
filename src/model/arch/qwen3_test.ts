/**
 * Qwen3, the first family added as a description: a tiny random checkpoint made here from its
 * tensor table, with head_dim (12) other than hidden / heads (8) and q/k norm weights large
 * enough that the norm matters. The float64 reference with and without its `qk_norm` step
 * differs by far more than the verify bounds, and the GPU forward (safetensors F32, and the same
 * checkpoint converted to a Q8_0 GGUF and read back) matches the reference within them: so the
 * GPU plan runs the norm, on q and k at their places in the fused q/k/v output.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { verifyOnGpu } from "../../../test/support/family_fixture.ts";
import { tinyFamilyFiles } from "../../../test/support/tiny_family.ts";
import { type Checkpoint, openCheckpoint } from "../checkpoint.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../convert/convert.ts";
import { ReferenceModel } from "../../reference/model.ts";
import { fileListFiles } from "../../formats/source.ts";
import { archOf, type ShapeConfig } from "./mod.ts";

const SHAPE: ShapeConfig = {
  hiddenSize: 32,
  intermediateSize: 40,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 12,
  vocabSize: 96,
  attentionBias: false,
  tieWordEmbeddings: false,
};
/**
 * q/k norm weights around 2: scores 4x those of unit-RMS heads, so the norm matters; not much
 * more, since f32 rounding of an attention score grows with it (see `verify.ts`'s bounds).
 */
const OPTIONS = { arch: "qwen3", shape: SHAPE, scale: { qNorm: 2, kNorm: 2 } };

const PROMPTS = [
  [1, 17, 40, 95, 3, 3, 60],
  Array.from({ length: 40 }, (_, i) => (i * 37 + 5) % SHAPE.vocabSize),
];

function safetensors(): Promise<Checkpoint> {
  return openCheckpoint(fileListFiles(tinyFamilyFiles(OPTIONS).files));
}

async function gguf(): Promise<{ checkpoint: Checkpoint; names: string[] }> {
  const parts: Uint8Array[] = [];
  const report = await writeHfAsGguf(
    await readHfCheckpoint(fileListFiles(tinyFamilyFiles(OPTIONS).files)),
    (b) => void parts.push(b.slice()),
    { mix: "q8_0" },
  );
  const file = new File(parts as BlobPart[], "tiny-qwen3-q8_0.gguf");
  return {
    checkpoint: await openCheckpoint(fileListFiles([file])),
    names: report.tensors.map((t) => t.name),
  };
}

function maxDiff(a: Float64Array[], b: Float64Array[]): number {
  let worst = 0;
  a.forEach((row, t) => row.forEach((v, i) => worst = Math.max(worst, Math.abs(v - b[t]![i]!))));
  return worst;
}

Deno.test("qwen3: config, tensors and the q/k norm's effect on the float64 reference", async () => {
  const ck = await safetensors();
  const c = ck.config;
  deepStrictEqual(
    [c.arch, c.headDim, c.attentionBias, c.hiddenSize / c.numHeads],
    ["qwen3", 12, false, 8],
  );
  equal(ck.weights.layers[1]!.qNorm!.name, "model.layers.1.self_attn.q_norm.weight");
  deepStrictEqual(ck.weights.layers[0]!.kNorm!.shape, [12]);
  equal(ck.weights.layers[0]!.qBias, undefined);
  ok(archOf(c).layer.some((s) => s.op === "qk_norm"));
  const ref = await ReferenceModel.load(c, ck.weights);
  // The same layer without the q/k norm: the description's recipe less that step.
  const ablated = await ReferenceModel.load(c, ck.weights, {
    testRecipe: archOf(c).layer.filter((s) => s.op !== "qk_norm"),
  });
  for (const tokens of PROMPTS) {
    const moved = maxDiff(ref.logits(tokens), ablated.logits(tokens));
    console.log(`  ${tokens.length} tokens: dropping the q/k norm moves the logits by ${moved}`);
    ok(moved >= 0.1, `dropping the q/k norm moves the logits by ${moved}`);
  }
});

Deno.test("qwen3 GGUF: llama.cpp's names, the config read back as from config.json", async () => {
  const { checkpoint, names } = await gguf();
  ok(names.includes("blk.1.attn_q_norm.weight") && names.includes("blk.0.attn_k_norm.weight"));
  ok(!names.some((n) => n.endsWith(".bias")));
  equal(checkpoint.gguf!.metadata.string("general.architecture"), "qwen3");
  equal(checkpoint.gguf!.ropeInterleaved, false);
  const { dtype: _a, ...fromGguf } = checkpoint.config;
  const { dtype: _b, ...fromHf } = (await safetensors()).config;
  deepStrictEqual(fromGguf, { ...fromHf, eosTokenIds: [] });
  equal(checkpoint.weights.layers[1]!.qNorm!.dtype, "f32");
});

for (const format of ["safetensors", "gguf"] as const) {
  for (const paths of ["cpu", "gpu"] as const) {
    Deno.test(`qwen3 ${format} on the GPU (${paths} paths) matches float64 within verify's bounds`, async () => {
      const ck = format === "gguf" ? (await gguf()).checkpoint : await safetensors();
      await verifyOnGpu(ck, paths, PROMPTS);
    });
  }
}
