/**
 * A family fixture of `test/fixtures/families/<family>/` (README there) opened for tests: the HF
 * folder and llama.cpp's GGUF as Kiln checkpoints, llama.cpp's teacher-forced logits, and the
 * same HF checkpoint converted to a quantized GGUF; plus the comparisons a family test makes
 * (float64 reference or GPU forward against llama.cpp, GPU against float64 via `verifyModel`).
 */
import { ok } from "node:assert/strict";
import { type Checkpoint, openCheckpoint } from "../../src/model/checkpoint.ts";
import { Forward } from "../../src/model/forward.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../src/model/gguf/convert.ts";
import type { GgufMix } from "../../src/model/gguf/quant_mix.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import { ReferenceModel } from "../../src/model/reference_model.ts";
import { readCheckpoint } from "../../src/model/safetensors.ts";
import { fileListFiles } from "../../src/model/source.ts";
import { mapWeights, type ModelWeights, type WeightInfo } from "../../src/model/weights.ts";
import { type Reference, tolerance, verifyModel } from "../../src/model/verify.ts";
import { testGpu, withErrorScopes } from "./gpu.ts";

const DIR = new URL("../fixtures/families/", import.meta.url);

/** One family's fixture. */
export interface FamilyFixture {
  /** The manifest (`tokens`, `ablations`, ...). */
  manifest: { tokens: number[]; ablations: { feature: string; max_abs_delta: number }[] };
  /** llama.cpp's logits, one row per position. */
  llamaCpp: Float32Array[];
  hf(): Promise<Checkpoint>;
  gguf(): Promise<Checkpoint>;
  /** The HF checkpoint converted by Kiln to a GGUF of `mix`, opened. */
  converted(mix: GgufMix): Promise<Checkpoint>;
  /** The HF tensors as stored, without the family's HF conventions (`hfAddOne`). */
  hfAsStored(): Promise<ModelWeights<WeightInfo>>;
}

function file(url: URL, name = url.pathname.split("/").pop()!): File {
  return new File([Deno.readFileSync(url)], name);
}

export function familyFixture(family: string): FamilyFixture {
  const dir = new URL(`${family}/`, DIR);
  const manifest = JSON.parse(Deno.readTextFileSync(new URL("manifest.json", dir)));
  const raw = Deno.readFileSync(new URL("logits.f32", dir));
  const all = new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
  const [rows, vocab] = manifest.logits.shape as [number, number];
  const llamaCpp = Array.from({ length: rows }, (_, t) => all.subarray(t * vocab, (t + 1) * vocab));
  const hfFiles = () => [
    file(new URL("hf/config.json", dir)),
    file(new URL("hf/model.safetensors", dir)),
  ];
  return {
    manifest,
    llamaCpp,
    hf: () => openCheckpoint(fileListFiles(hfFiles())),
    gguf: () => openCheckpoint(fileListFiles([file(new URL("model.gguf", dir))])),
    async hfAsStored() {
      const files = fileListFiles(hfFiles());
      const config = (await openCheckpoint(files)).config;
      return mapWeights(config, await readCheckpoint((name) => files.open(name)));
    },
    async converted(mix) {
      const parts: Uint8Array[] = [];
      await writeHfAsGguf(
        await readHfCheckpoint(fileListFiles(hfFiles())),
        (b) => void parts.push(b.slice()),
        { mix },
      );
      const gguf = new File(parts as BlobPart[], `${family}-${mix}.gguf`);
      return await openCheckpoint(fileListFiles([gguf]));
    },
  };
}

/** The largest |a - b| over rows of logits. */
export function maxAbsDiff(a: ArrayLike<number>[], b: ArrayLike<number>[]): number {
  let worst = 0;
  a.forEach((row, t) => {
    for (let i = 0; i < row.length; i++) worst = Math.max(worst, Math.abs(row[i]! - b[t]![i]!));
  });
  return worst;
}

function argmax(v: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i]! > v[best]!) best = i;
  return best;
}

/** Positions whose top token is the same in `a` and `b`. */
export function argmaxAgreement(a: ArrayLike<number>[], b: ArrayLike<number>[]): number {
  return a.filter((row, t) => argmax(row) === argmax(b[t]!)).length;
}

/** The GPU forward's teacher-forced logits at every position of `tokens`, in one prefill. */
export async function gpuLogits(
  model: GpuModel,
  tokens: readonly number[],
): Promise<Float32Array[]> {
  const fwd = new Forward(model);
  try {
    const positions = tokens.map((_, i) => i);
    const blocks = Math.ceil(tokens.length / model.blockSize);
    const flat = await fwd.run({
      tokens,
      positions,
      slots: positions,
      tableOffsets: positions.map(() => 0),
      blockTable: Array.from({ length: blocks }, (_, i) => i),
      logitRows: positions,
    });
    const V = model.config.vocabSize;
    return positions.map((t) => flat.subarray(t * V, (t + 1) * V));
  } finally {
    fwd.destroy();
  }
}

/**
 * `ck` on the GPU (`paths` kernels, f32 KV cache) against the float64 reference of the same
 * checkpoint, `verifyModel`'s bounds: prompt logits (prefill) and `steps` greedy steps (decode).
 */
export async function verifyOnGpu(
  ck: Checkpoint,
  paths: "cpu" | "gpu",
  prompts: readonly number[][],
  steps = 4,
): Promise<void> {
  const ref = await ReferenceModel.load(ck.config, ck.weights);
  const reference: Reference = {
    vocab_size: ck.config.vocabSize,
    prompts: prompts.map((p) => ref.prompt(p, steps)),
  };
  const gpu = await testGpu(paths);
  await withErrorScopes(gpu.device, async () => {
    const model = await GpuModel.fromCheckpoint(gpu, ck, { kvDtype: "f32" });
    try {
      const { passed, results } = await verifyModel(model, reference);
      for (const r of results) {
        console.log(
          `  prompt ${r.prompt} (${r.tokens} tokens): max|err| ${r.max_abs_err.toExponential(2)}` +
            ` (bound ${r.max_abs_bound.toExponential(2)}), rel_l2 ${r.rel_l2.toExponential(2)}` +
            ` (bound ${tolerance("f32").relL2}), greedy ${r.greedy_agree}/${r.greedy_checked}`,
        );
      }
      ok(passed, JSON.stringify(results));
    } finally {
      model.destroy();
    }
  });
}

/** What an ablation builds: the float64 reference with one feature off. */
export type Ablation = (ck: Checkpoint) => Promise<ReferenceModel>;

/** Features the fixture's teacher-forced logits must each move by >= 0.1 when turned off. */
export async function checkAblations(
  fixture: FamilyFixture,
  ck: Checkpoint,
  ablations: Readonly<Record<string, Ablation>>,
): Promise<void> {
  const tokens = fixture.manifest.tokens;
  const full = (await ReferenceModel.load(ck.config, ck.weights)).logits(tokens);
  for (const [feature, ablate] of Object.entries(ablations)) {
    const moved = maxAbsDiff(full, (await ablate(ck)).logits(tokens));
    console.log(`  without ${feature}: the logits move by ${moved.toFixed(3)}`);
    ok(moved >= 0.1, `turning ${feature} off moves the logits by only ${moved}`);
  }
}
