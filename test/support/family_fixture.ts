/**
 * The model-family fixtures (`test/fixtures/families/<family>/`, README there: llama.cpp's
 * teacher-forced logits on a tiny random checkpoint) as family tests use them: the checkpoint
 * from its HF folder or its GGUF (or converted by Kiln to a quantized GGUF), llama.cpp's logits
 * as rows, Kiln's float64 reference held against them, the GPU forward held against the float64
 * reference with `verifyModel`'s bounds, and ablations. One helper for every family test:
 * `familyFixtureTests` registers the shared checks; `familyFixture` and the functions below serve
 * the checks a family adds.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { type Checkpoint, openCheckpoint } from "../../src/model/checkpoint.ts";
import type { ModelConfig } from "../../src/model/config.ts";
import { Forward } from "../../src/runtime/forward.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../src/convert/convert.ts";
import type { GgufMix } from "../../src/convert/quant_mix.ts";
import { GpuModel } from "../../src/runtime/gpu_model.ts";
import { ReferenceModel, type ReferenceOptions } from "../../src/reference/model.ts";
import { ropeInvFreq } from "../../src/model/rope.ts";
import { readCheckpoint } from "../../src/formats/safetensors.ts";
import { fileListFiles } from "../../src/formats/source.ts";
import { type Reference, tolerance, verifyModel } from "../../src/reference/verify.ts";
import { mapWeights, type ModelWeights, type WeightInfo } from "../../src/model/weights.ts";
import type { PathKind } from "../../src/gpu/paths.ts";
import { testGpu, withErrorScopes } from "./gpu.ts";
import { type FixtureManifest, llamaCppBounds } from "./family_bounds.ts";

const DIR = new URL("../fixtures/families/", import.meta.url);
const ROOT = DIR.pathname;

/** One family's fixture, opened lazily (`familyFixture`). */
export interface FixtureFiles {
  /** The manifest (`tokens`, `ablations`, ...). */
  manifest: FixtureManifest;
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

/** The fixture of `family`: its manifest and llama.cpp's logits, its checkpoints on demand. */
export function familyFixture(family: string): FixtureFiles {
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
    converted: (mix) => quantizedCheckpoint(family, mix),
  };
}

/**
 * The GPU tests of a fixture opened with `familyFixture`, registered under `family`: llama.cpp's
 * own GGUF on the GPU (cpu paths, f32 KV cache) against llama.cpp's logits, within
 * `llamaCppBounds(manifest, llamaCppBound).gpu`
 * and the same argmax at every position; then the HF folder (F32) and its Q4_K_M conversion on
 * both kernel paths against float64 on the same weights over `prompts` (`verifyOnGpu`).
 */
export function fixtureGpuTests(
  family: string,
  fx: FixtureFiles,
  llamaCppBound: number,
  prompts: readonly number[][],
): void {
  const tokens = fx.manifest.tokens;
  Deno.test(`${family} on the GPU: llama.cpp's GGUF against llama.cpp's logits, greedy agreement`, async () => {
    const ck = await fx.gguf();
    const gpu = await testGpu("cpu");
    await withErrorScopes(gpu.device, async () => {
      const model = await GpuModel.fromCheckpoint(gpu, ck, { kvDtype: "f32" });
      try {
        const logits = await gpuLogits(model, tokens);
        const err = maxAbsDiff(logits, fx.llamaCpp);
        const agree = argmaxAgreement(logits, fx.llamaCpp);
        console.log(
          `  GPU vs llama.cpp: max|err| ${
            err.toExponential(2)
          }, top token ${agree}/${tokens.length}`,
        );
        const bound = llamaCppBounds(fx.manifest, llamaCppBound).gpu;
        ok(err < bound, `${err} (bound ${bound})`);
        equal(agree, tokens.length);
      } finally {
        model.destroy();
      }
    });
  });
  for (const format of ["F32 safetensors", "Q4_K_M GGUF"] as const) {
    for (const paths of ["cpu", "gpu"] as const) {
      Deno.test(`${family} ${format} on the GPU (${paths} paths) matches float64 within verify's bounds`, async () => {
        const ck = format === "F32 safetensors" ? await fx.hf() : await fx.converted("q4_k_m");
        await verifyOnGpu(ck, paths, prompts);
      });
    }
  }
}

/** One family's fixture: its tokens and llama.cpp's logits at each of their positions. */
export interface FamilyFixture {
  family: string;
  tokens: number[];
  /** llama.cpp's logits, one row per position. */
  logits: Float64Array[];
  manifest: FixtureManifest & Record<string, unknown>;
}

export async function loadFixture(family: string): Promise<FamilyFixture> {
  const manifest = JSON.parse(await Deno.readTextFile(`${ROOT}${family}/manifest.json`));
  const [rows, vocab] = manifest.logits.shape as [number, number];
  const bytes = await Deno.readFile(`${ROOT}${family}/logits.f32`);
  const all = new Float32Array(bytes.buffer, bytes.byteOffset, rows * vocab);
  const logits = Array.from(
    { length: rows },
    (_, p) => Float64Array.from(all.subarray(p * vocab, (p + 1) * vocab)),
  );
  return { family, tokens: manifest.tokens, logits, manifest };
}

/** The fixture's checkpoint as its HF folder or its (F32) GGUF. */
export function fixtureCheckpoint(family: string, format: "hf" | "gguf"): Promise<Checkpoint> {
  return openCheckpoint(
    dirFiles(format === "hf" ? `${ROOT}${family}/hf` : `${ROOT}${family}/model.gguf`),
  );
}

/** The fixture's HF folder converted to a GGUF of `mix` in memory, and opened. */
export async function quantizedCheckpoint(family: string, mix: GgufMix): Promise<Checkpoint> {
  const parts: Uint8Array[] = [];
  await writeHfAsGguf(
    await readHfCheckpoint(dirFiles(`${ROOT}${family}/hf`)),
    (b) => void parts.push(b.slice()),
    { mix },
  );
  return openCheckpoint(fileListFiles([new File(parts as BlobPart[], `${family}-${mix}.gguf`)]));
}

/** max |a - b| over every row. */
export function maxAbsDiff(
  a: readonly ArrayLike<number>[],
  b: readonly ArrayLike<number>[],
): number {
  let worst = 0;
  a.forEach((row, t) => {
    for (let i = 0; i < row.length; i++) worst = Math.max(worst, Math.abs(row[i]! - b[t]![i]!));
  });
  return worst;
}

/** max |a - b| over every row (as `maxAbsDiff`). */
export const maxDiff = maxAbsDiff;

function argmax(v: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i]! > v[best]!) best = i;
  return best;
}

/** Positions whose top token is the same in `a` and `b`. */
export function argmaxAgreement(
  a: readonly ArrayLike<number>[],
  b: readonly ArrayLike<number>[],
): number {
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

/** Kiln's float64 reference on `ck` against llama.cpp: max |err| and argmax agreement. */
export async function referenceVsLlamaCpp(
  ck: Checkpoint,
  fx: FamilyFixture,
  options: ReferenceOptions = {},
): Promise<{ maxErr: number; agree: number; positions: number; logits: Float64Array[] }> {
  const ref = await ReferenceModel.load(ck.config, ck.weights, options);
  const logits = ref.logits(fx.tokens);
  const agree = argmaxAgreement(logits, fx.logits);
  return { maxErr: maxAbsDiff(logits, fx.logits), agree, positions: logits.length, logits };
}

/**
 * `ck` on the GPU (`paths` kernels, f32 KV cache) against the float64 reference of the same
 * checkpoint, `verifyModel`'s bounds: prompt logits (prefill) and `steps` greedy steps (decode).
 * `then` runs on the model before it is freed. Returns the worst max |err|.
 */
async function onGpu(
  ck: Checkpoint,
  paths: PathKind,
  prompts: readonly number[][],
  steps: number,
  then?: (model: GpuModel) => Promise<void>,
): Promise<number> {
  const ref = await ReferenceModel.load(ck.config, ck.weights);
  const reference: Reference = {
    vocab_size: ck.config.vocabSize,
    prompts: prompts.map((p) => ref.prompt(p, steps)),
  };
  const gpu = await testGpu(paths);
  return await withErrorScopes(gpu.device, async () => {
    const model = await GpuModel.fromCheckpoint(gpu, ck, { kvDtype: "f32" });
    try {
      const { passed, results } = await verifyModel(model, reference);
      for (const r of results) {
        console.log(
          `  ${paths}: prompt ${r.prompt} (${r.tokens} tokens): max|err| ` +
            `${r.max_abs_err.toExponential(2)} (bound ${r.max_abs_bound.toExponential(2)}), ` +
            `rel_l2 ${r.rel_l2.toExponential(2)} (bound ${tolerance("f32").relL2}), ` +
            `greedy ${r.greedy_agree}/${r.greedy_checked}`,
        );
      }
      ok(passed, JSON.stringify(results));
      await then?.(model);
      return Math.max(...results.map((r) => r.max_abs_err));
    } finally {
      model.destroy();
    }
  });
}

/**
 * `onGpu` over `prompts`: asserts `verifyModel` passes; `then` runs on the model before it is
 * freed.
 */
export async function verifyOnGpu(
  ck: Checkpoint,
  paths: PathKind,
  prompts: readonly number[][],
  steps = 4,
  then?: (model: GpuModel) => Promise<void>,
): Promise<void> {
  await onGpu(ck, paths, prompts, steps, then);
}

/**
 * The GPU forward of `ck` (`paths` kernels, f32 KV cache) against Kiln's float64 reference on
 * the same (dequantized) weights, over the fixture's tokens and a shorter prompt, each followed
 * by `steps` greedy tokens: asserts `verifyModel` passes, returns the worst max |err|. With
 * `llamaCpp` (the fixture's own weights), its logits are also held against llama.cpp's: within
 * `llamaCpp` and the same argmax at every position.
 */
export function gpuMatchesReference(
  ck: Checkpoint,
  fx: FamilyFixture,
  paths: PathKind,
  steps = 4,
  llamaCpp?: number,
): Promise<number> {
  const prompts = [fx.tokens, fx.tokens.slice(0, 7)];
  return onGpu(ck, paths, prompts, steps, async (model) => {
    if (llamaCpp === undefined) return;
    const rows = await gpuLogits(model, fx.tokens);
    const maxErr = maxAbsDiff(rows, fx.logits), agree = argmaxAgreement(rows, fx.logits);
    console.log(
      `  ${fx.family} ${paths}: max |GPU - llama.cpp| ${maxErr.toExponential(2)}, ` +
        `argmax ${agree}/${fx.tokens.length}`,
    );
    ok(maxErr < llamaCpp, `max |GPU - llama.cpp| ${maxErr}`);
    ok(agree === fx.tokens.length, `argmax agrees at ${agree} positions`);
  });
}

/** What an ablation builds: the float64 reference with one feature off. */
export type Ablation = (ck: Checkpoint) => Promise<ReferenceModel>;

/**
 * Features the fixture's teacher-forced logits must each move by >= 0.1 when turned off.
 * Returns how far each moved them.
 */
export async function checkAblations(
  fixture: FixtureFiles,
  ck: Checkpoint,
  ablations: Readonly<Record<string, Ablation>>,
): Promise<Record<string, number>> {
  const tokens = fixture.manifest.tokens;
  const full = (await ReferenceModel.load(ck.config, ck.weights)).logits(tokens);
  const out: Record<string, number> = {};
  for (const [feature, ablate] of Object.entries(ablations)) {
    const moved = out[feature] = maxAbsDiff(full, (await ablate(ck)).logits(tokens));
    console.log(`  without ${feature}: the logits move by ${moved.toFixed(3)}`);
    ok(moved >= 0.1, `turning ${feature} off moves the logits by only ${moved}`);
  }
  return out;
}

/**
 * Register the shared tests of a family fixture: the float64 reference on the HF folder and on
 * the GGUF agrees with llama.cpp within `llamaCppBounds(manifest, most).reference` (and on every
 * argmax), and rejects a planted RMSNorm epsilon x10; the GPU forward of the GGUF (F32) and of
 * the HF folder converted to `mix` matches the reference on the cpu and gpu kernel paths (the F32
 * GGUF also llama.cpp, within `llamaCppBounds(...).gpu`). `most`: the bounds' ceiling. Returns
 * the fixture, for the checks the family adds.
 */
export function familyFixtureTests(family: string, most: number, mix: GgufMix): FixtureFiles {
  const fixture = familyFixture(family);
  Deno.test(`${family}: the GGUF's config is the HF folder's`, async () => {
    const [hf, gguf] = await Promise.all(
      (["hf", "gguf"] as const).map(async (f) => (await fixtureCheckpoint(family, f)).config),
    );
    // The same RoPE frequencies, however the scaling is written (llama3 parameters in HF, the
    // factors they give in a GGUF); token ids and dtype come from other places in each.
    const freqs = (c: ModelConfig) =>
      [...ropeInvFreq(c.rotaryDim ?? c.headDim, c.ropeTheta, c.ropeScaling)].map((f) =>
        f.toPrecision(6)
      );
    deepStrictEqual(freqs(gguf!), freqs(hf!));
    const rest = (c: ModelConfig) => {
      const { dtype: _d, eosTokenIds: _e, bosTokenId: _b, ropeScaling: _r, ...more } = c;
      return more;
    };
    deepStrictEqual(rest(gguf!), rest(hf!));
  });
  for (const format of ["hf", "gguf"] as const) {
    Deno.test(`${family} ${format}: Kiln's float64 reference agrees with llama.cpp`, async () => {
      const fx = await loadFixture(family);
      const bound = llamaCppBounds(fx.manifest, most).reference;
      const r = await referenceVsLlamaCpp(await fixtureCheckpoint(family, format), fx);
      console.log(
        `  ${family} ${format}: max |float64 - llama.cpp| ${r.maxErr.toExponential(2)} ` +
          `(bound ${bound.toExponential(2)}), argmax ${r.agree}/${r.positions}`,
      );
      ok(r.maxErr < bound, `max |float64 - llama.cpp| ${r.maxErr}`);
      ok(r.agree === r.positions, `argmax agrees at ${r.agree} of ${r.positions} positions`);
    });
  }
  Deno.test({
    name:
      `${family}: the llama.cpp bound rejects the float64 reference with RMSNorm epsilon x10 (the old flat 1e-3 did not)`,
    // A fixture without a measured error has only the ceiling `most` as its bound.
    ignore: fixture.manifest.float64_reference === undefined,
  }, async () => {
    const fx = await loadFixture(family);
    const bound = llamaCppBounds(fx.manifest, most).reference;
    const ck = await fixtureCheckpoint(family, "hf");
    const planted = { ...ck, config: { ...ck.config, rmsNormEps: ck.config.rmsNormEps * 10 } };
    const r = await referenceVsLlamaCpp(planted, fx);
    console.log(
      `  ${family} epsilon x10: max |float64 - llama.cpp| ${r.maxErr.toExponential(2)} ` +
        `(bound ${bound.toExponential(2)})`,
    );
    ok(r.maxErr >= bound, `epsilon x10 passed: ${r.maxErr} < ${bound}`);
  });
  for (const weights of ["f32", mix] as const) {
    for (const paths of ["cpu", "gpu"] as const) {
      Deno.test(`${family} ${weights} on the GPU (${paths} paths) matches float64`, async () => {
        const fx = await loadFixture(family);
        const ck = weights === "f32"
          ? await fixtureCheckpoint(family, "gguf")
          : await quantizedCheckpoint(family, mix);
        const bound = llamaCppBounds(fx.manifest, most).gpu;
        await gpuMatchesReference(ck, fx, paths, 4, weights === "f32" ? bound : undefined);
      });
    }
  }
  return fixture;
}
