/**
 * Qwen3-MoE against ground truth Kiln did not compute: `test/fixtures/families/qwen3moe` (4
 * experts of width 32, top-2, renormalised; per-head q/k norm), its HF folder and its GGUF both
 * loaded through `openCheckpoint`, the float64 reference against llama.cpp's teacher-forced
 * logits, and the ablations: all four experts instead of the top 2 moves the logits as much as
 * it moved llama.cpp's, and dropping the q/k norm moves them too. The GPU forward (F32, Q8_0, a
 * Q4_K_M conversion, and a wider random checkpoint whose experts really are Q4_K/Q6_K) matches
 * the float64 reference within verify's bounds on both kernel paths, and the fixture's F32 GGUF
 * matches llama.cpp; the engine serves it. Bad expert counts are refused naming the key.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { WebGpuEngine } from "../../engines/webgpu/engine.ts";
import { collect, request } from "../../../test/support/fortune_engine.ts";
import { testGpu } from "../../../test/support/gpu.ts";
import { verifyOnGpu } from "../../../test/support/family_fixture.ts";
import { tinyFamilyFiles } from "../../../test/support/tiny_family.ts";
import { type Checkpoint, openCheckpoint } from "../checkpoint.ts";
import { parseConfig } from "../config.ts";
import { ggufConfig } from "../gguf/config.ts";
import { type ConvertReport, readHfCheckpoint, writeHfAsGguf } from "../../convert/convert.ts";
import { GgufMetadata } from "../../formats/gguf/metadata.ts";
import { hfTensors } from "../gguf/tensors.ts";
import type { GgufMix } from "../../convert/quant_mix.ts";
import { GpuModel } from "../../runtime/gpu_model.ts";
import { ReferenceModel } from "../../reference/model.ts";
import { fileListFiles } from "../../formats/source.ts";
import { verifyModel } from "../../reference/verify.ts";
import { archOf, type ShapeConfig } from "./mod.ts";

const DIR = new URL("../../../test/fixtures/families/qwen3moe/", import.meta.url);
const MANIFEST = JSON.parse(await Deno.readTextFile(new URL("manifest.json", DIR)));
const TOKENS: number[] = MANIFEST.tokens;
const V = 259;
/** llama.cpp's logits, [tokens, vocab]. */
const LLAMA = new Float32Array((await Deno.readFile(new URL("logits.f32", DIR))).buffer);

async function file(path: string): Promise<File> {
  return new File([await Deno.readFile(new URL(path, DIR))], path.split("/").pop()!);
}
const hf = async () => [await file("hf/config.json"), await file("hf/model.safetensors")];
const open = async (files: File[]) => await openCheckpoint(fileListFiles(files));

/** A checkpoint's HF files converted to a GGUF with `mix`, opened. */
async function converted(files: File[], mix: GgufMix): Promise<[Checkpoint, ConvertReport]> {
  const parts: Uint8Array[] = [];
  const report = await writeHfAsGguf(
    await readHfCheckpoint(fileListFiles(files)),
    (b) => void parts.push(b.slice()),
    { mix },
  );
  return [await open([new File(parts as BlobPart[], `moe-${mix}.gguf`)]), report];
}

function maxDiff(a: ArrayLike<number>[], b: (t: number, i: number) => number): number {
  let worst = 0;
  a.forEach((row, t) => {
    for (let i = 0; i < row.length; i++) worst = Math.max(worst, Math.abs(row[i]! - b(t, i)));
  });
  return worst;
}

const argmax = (row: ArrayLike<number>) => {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
};

/** Positions whose argmax matches llama.cpp's. */
function greedyAgreement(rows: ArrayLike<number>[]): number {
  return rows.filter((r, t) => argmax(r) === argmax(LLAMA.subarray(t * V, (t + 1) * V))).length;
}

const llama = (t: number, i: number) => LLAMA[t * V + i]!;

Deno.test("qwen3moe fixture: HF and GGUF read alike; float64 matches llama.cpp; ablations", async () => {
  const fromHf = await open(await hf());
  const fromGguf = await open([await file("model.gguf")]);
  const c = fromHf.config;
  deepStrictEqual(c.moe, { experts: 4, topK: 2, expertIntermediateSize: 32, normTopK: true });
  const { dtype: _a, ...g } = fromGguf.config;
  const { dtype: _b, ...h } = c;
  deepStrictEqual(g, { ...h, eosTokenIds: g.eosTokenIds });
  equal(
    fromGguf.weights.layers[1]!.experts![3]!.down.name,
    "model.layers.1.mlp.experts.3.down_proj.weight",
  );
  deepStrictEqual(fromGguf.weights.layers[0]!.experts![2]!.gate.shape, [32, 32]);
  for (const ck of [fromHf, fromGguf]) {
    const rows = (await ReferenceModel.load(ck.config, ck.weights)).logits(TOKENS);
    const err = maxDiff(rows, llama);
    const agree = greedyAgreement(rows);
    console.log(
      `  ${ck.format}: max |float64 - llama.cpp| ${err.toExponential(2)}, argmax ${agree}/50`,
    );
    ok(err < 1e-4, `${ck.format}: ${err}`);
    equal(agree, TOKENS.length);
  }
  const ref = (await ReferenceModel.load(c, fromHf.weights)).logits(TOKENS);
  // Every expert (top-4 of 4) instead of the top 2: llama.cpp recorded how far that moves.
  const all = await ReferenceModel.load({ ...c, moe: { ...c.moe!, topK: 4 } }, fromHf.weights);
  const moved = maxDiff(all.logits(TOKENS), (t, i) => ref[t]![i]!);
  const recorded = MANIFEST.ablations.find((a: { feature: string }) => a.feature === "top_k");
  console.log(`  all experts move the logits by ${moved} (llama.cpp: ${recorded.max_abs_delta})`);
  ok(moved >= 0.1 && Math.abs(moved - recorded.max_abs_delta) < 1e-3, `${moved}`);
  const noNorm = await ReferenceModel.load(c, fromHf.weights, {
    testRecipe: archOf(c).layer.filter((s) => s.op !== "qk_norm"),
  });
  const unnormed = maxDiff(noNorm.logits(TOKENS), (t, i) => ref[t]![i]!);
  console.log(`  dropping the q/k norm moves the logits by ${unnormed}`);
  ok(unnormed >= 0.1);
});

Deno.test("qwen3moe: Kiln's conversion of the HF folder holds the fixture GGUF's tensors byte for byte", async () => {
  const fixture = (await open([await file("model.gguf")])).gguf!;
  const parts: Uint8Array[] = [];
  await writeHfAsGguf(await readHfCheckpoint(fileListFiles(await hf())), (b) => {
    parts.push(b.slice());
  });
  const ours = (await open([new File(parts as BlobPart[], "moe-f32.gguf")])).gguf!;
  const bytes = (
    t: {
      source: { read(o: number, n: number): Promise<Uint8Array> };
      offset: number;
      length: number;
    },
  ) => t.source.read(t.offset, t.length);
  const names = [...fixture.tensors.keys()];
  deepStrictEqual([...ours.tensors.keys()].sort(), [...names].sort());
  ok(names.includes("model.layers.1.mlp.experts.3.up_proj.weight"));
  for (const key of ["expert_count", "expert_used_count", "expert_feed_forward_length"]) {
    equal(ours.metadata.uint(`qwen3moe.${key}`), fixture.metadata.uint(`qwen3moe.${key}`), key);
  }
  for (const name of names) {
    const [a, b] = [fixture.tensors.get(name)!, ours.tensors.get(name)!];
    deepStrictEqual([b.ggufName, b.shape, b.dtype], [a.ggufName, a.shape, a.dtype], name);
    deepStrictEqual(await bytes(b), await bytes(a), name);
  }
});

/** Wide enough for the K-quants: Q4_K_M gives its experts Q4_K (gate, up) and Q6_K (down). */
const WIDE: ShapeConfig = {
  hiddenSize: 256,
  intermediateSize: 256,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 64,
  vocabSize: 96,
  attentionBias: false,
  tieWordEmbeddings: false,
  moe: { experts: 5, topK: 3, expertIntermediateSize: 256, normTopK: true },
};
const wide = () =>
  tinyFamilyFiles({ arch: "qwen3moe", shape: WIDE, std: 0.1, scale: { qNorm: 2, kNorm: 2 } }).files;

type Case = "hf" | "gguf" | "q8_0" | "q4_k_m" | "wide-q4_k_m";
const CASES: Case[] = ["hf", "gguf", "q8_0", "q4_k_m", "wide-q4_k_m"];

async function checkpointOf(c: Case): Promise<Checkpoint> {
  if (c === "hf") return await open(await hf());
  if (c === "gguf") return await open([await file("model.gguf")]);
  const [ck, report] = c === "wide-q4_k_m"
    ? await converted(wide(), "q4_k_m")
    : await converted(await hf(), c);
  const types = (
    suffix: string,
  ) => [...new Set(report.tensors.filter((t) => t.name.endsWith(suffix)).map((t) => t.type))];
  console.log(`  experts as ${types("gate_exps.weight")} / ${types("down_exps.weight")}`);
  if (c === "wide-q4_k_m") {
    deepStrictEqual(types("ffn_gate_exps.weight"), ["Q4_K"]);
    deepStrictEqual(types("ffn_down_exps.weight").sort(), ["Q4_K", "Q6_K"]);
  }
  return ck;
}

for (const c of CASES) {
  for (const paths of ["cpu", "gpu"] as const) {
    Deno.test(`qwen3moe ${c} on the GPU (${paths} paths) matches float64 within verify's bounds`, async () => {
      const ck = await checkpointOf(c);
      const prompts = c === "wide-q4_k_m"
        ? [[1, 17, 40, 95, 3, 3, 60], Array.from({ length: 21 }, (_, i) => (i * 37 + 5) % 96)]
        : [TOKENS.slice(0, 7), TOKENS];
      await verifyOnGpu(ck, paths, prompts, 4, async (model) => {
        if (c !== "gguf") return;
        // The same file in llama.cpp: its teacher-forced logits over the whole prompt.
        const vsLlama = await verifyModel(model, {
          vocab_size: V,
          prompts: [{
            input_ids: TOKENS,
            logits: TOKENS.map((_, t) => [...LLAMA.subarray(t * V, (t + 1) * V)]),
            greedy_tokens: [],
            greedy_margins: [],
            greedy_step_logits: [],
          }],
        });
        const r = vsLlama.results[0]!;
        console.log(
          `  vs llama.cpp: max|err| ${r.max_abs_err.toExponential(2)}, rel_l2 ${
            r.rel_l2.toExponential(2)
          }`,
        );
        ok(r.max_abs_err < 1e-4, JSON.stringify(r));
      });
    });
  }
}

Deno.test("qwen3moe: WebGpuEngine serves the fixture GGUF from its path; greedy tokens as float64's", async () => {
  const files = dirFiles(new URL("model.gguf", DIR).pathname);
  const ck = await openCheckpoint(files);
  const want = (await ReferenceModel.load(ck.config, ck.weights)).greedy(TOKENS, 8);
  const engine = new WebGpuEngine({ files, name: "qwen3moe", kvBlocks: 16 });
  await engine.start(0n);
  try {
    const got = await collect(engine, request(TOKENS));
    ok(Math.min(...want.margins) > 0.1, `near-tie: ${want.margins}`);
    deepStrictEqual(got.ids, want.tokens);
  } finally {
    await engine.cleanup();
  }
});

const refused = (key: string) => (e: unknown) =>
  e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(key);

Deno.test("qwen3moe: no experts, top-k above the experts, dense layers or a conversion llama.cpp would misread are refused naming the key", async () => {
  const config = JSON.parse(await (await file("hf/config.json")).text());
  throws(() => parseConfig({ ...config, num_experts: 0 }), refused("config.num_experts"));
  throws(() => parseConfig({ ...config, num_experts: 2 ** 31 - 1 }), refused("config.num_experts"));
  throws(
    () => parseConfig({ ...config, num_experts_per_tok: 5 }),
    refused("config.num_experts_per_tok"),
  );
  throws(
    () => parseConfig({ ...config, num_experts_per_tok: undefined }),
    refused("config.num_experts_per_tok"),
  );
  throws(() => parseConfig({ ...config, mlp_only_layers: [1] }), refused("config.mlp_only_layers"));
  throws(
    () => parseConfig({ ...config, decoder_sparse_step: 2 }),
    refused("config.decoder_sparse_step"),
  );
  // llama.cpp's qwen3moe always renormalises: a checkpoint that does not cannot be converted.
  const plain = await readHfCheckpoint(fileListFiles(await hf()));
  await rejects(
    writeHfAsGguf({
      ...plain,
      config: { ...plain.config, moe: { ...plain.config.moe!, normTopK: false } },
    }, () => {}),
    refused("config.norm_topk_prob"),
  );
  const p = "qwen3moe.";
  const meta = (extra: Record<string, unknown>) =>
    new GgufMetadata({
      "general.architecture": "qwen3moe",
      [`${p}embedding_length`]: 32,
      [`${p}block_count`]: 2,
      [`${p}feed_forward_length`]: 32,
      [`${p}attention.head_count`]: 4,
      [`${p}attention.head_count_kv`]: 2,
      [`${p}attention.layer_norm_rms_epsilon`]: 1e-6,
      [`${p}vocab_size`]: 259,
      [`${p}expert_feed_forward_length`]: 32,
      [`${p}expert_count`]: 4,
      [`${p}expert_used_count`]: 2,
      ...extra,
    });
  const names = new Set<string>();
  const ck0 = await open(await hf());
  equal(ggufConfig(meta({}), names).moe?.topK, 2);
  throws(() => ggufConfig(meta({ [`${p}expert_count`]: 0 }), names), refused(`${p}expert_count`));
  throws(() => ggufConfig(meta({ [`${p}expert_count`]: 1e6 }), names), refused(`${p}expert_count`));
  throws(
    () => ggufConfig(meta({ [`${p}expert_used_count`]: 5 }), names),
    refused(`${p}expert_used_count`),
  );
  // A stacked expert tensor is one view per expert, each its slab of the bytes; too many
  // experts are refused before any view is made.
  const stacked = (experts: number) => ({
    name: "blk.1.ffn_down_exps.weight",
    ggmlType: 8,
    dtype: "Q8_0" as const,
    dims: [32, 16, experts],
    offset: 1000,
    length: experts * 16 * 34,
    source: { name: "none", size: 0, read: () => Promise.resolve(new Uint8Array()) },
  });
  const views = hfTensors(ck0.config, [stacked(3)]);
  deepStrictEqual(
    [...views.values()].map((v) => [v.name, v.shape, v.offset, v.length]),
    [0, 1, 2].map((e) => [
      `model.layers.1.mlp.experts.${e}.down_proj.weight`,
      [16, 32],
      1000 + e * 16 * 34,
      16 * 34,
    ]),
  );
  throws(
    () => hfTensors(ck0.config, [stacked(5000)]),
    refused("ffn_down_exps.weight: 5000 experts"),
  );
  // A top-k the GPU plan is given directly is refused by the routing kernel too.
  const ck = await open(await hf());
  const gpu = await testGpu();
  await rejects(
    (async () => {
      const model = await GpuModel.fromCheckpoint(gpu, {
        ...ck,
        config: { ...ck.config, moe: { ...ck.config.moe!, topK: 5 } },
      });
      try {
        await verifyModel(model, {
          prompts: [{
            input_ids: [1],
            logits: [new Array(V).fill(0)],
            greedy_tokens: [],
            greedy_margins: [],
            greedy_step_logits: [],
          }],
        });
      } finally {
        model.destroy();
      }
    })(),
    refused("topK 5"),
  );
});
