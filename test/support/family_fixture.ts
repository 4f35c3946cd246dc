/**
 * The model-family fixtures (`test/fixtures/families/<family>/`, llama.cpp's teacher-forced
 * logits on a tiny random checkpoint) as family tests use them: the checkpoint from its HF folder
 * or its GGUF, llama.cpp's logits as rows, Kiln's float64 reference held against them, and the
 * GPU forward held against the float64 reference with `verifyModel`'s bounds.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { type Checkpoint, openCheckpoint } from "../../src/model/checkpoint.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../src/model/gguf/convert.ts";
import type { GgufMix } from "../../src/model/gguf/quant_mix.ts";
import { Forward } from "../../src/model/forward.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import { ReferenceModel, type ReferenceOptions } from "../../src/model/reference_model.ts";
import { fileListFiles } from "../../src/model/source.ts";
import type { ModelConfig } from "../../src/model/config.ts";
import { ropeInvFreq } from "../../src/model/rope.ts";
import { type Reference, verifyModel } from "../../src/model/verify.ts";
import type { PathKind } from "../../src/gpu/paths.ts";
import { testGpu, withErrorScopes } from "./gpu.ts";

const ROOT = new URL("../fixtures/families/", import.meta.url).pathname;

/** One family's fixture: its tokens and llama.cpp's logits at each of their positions. */
export interface FamilyFixture {
  family: string;
  tokens: number[];
  /** llama.cpp's logits, one row per position. */
  logits: Float64Array[];
  manifest: Record<string, unknown>;
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
export function maxDiff(a: readonly Float64Array[], b: readonly Float64Array[]): number {
  let worst = 0;
  a.forEach((row, t) => row.forEach((v, i) => worst = Math.max(worst, Math.abs(v - b[t]![i]!))));
  return worst;
}

function argmax(v: Float64Array): number {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i]! > v[best]!) best = i;
  return best;
}

/** Kiln's float64 reference on `ck` against llama.cpp: max |err| and argmax agreement. */
export async function referenceVsLlamaCpp(
  ck: Checkpoint,
  fx: FamilyFixture,
  options: ReferenceOptions = {},
): Promise<{ maxErr: number; agree: number; positions: number; logits: Float64Array[] }> {
  const ref = await ReferenceModel.load(ck.config, ck.weights, options);
  const logits = ref.logits(fx.tokens);
  const agree = logits.filter((row, p) => argmax(row) === argmax(fx.logits[p]!)).length;
  return { maxErr: maxDiff(logits, fx.logits), agree, positions: logits.length, logits };
}

/**
 * The GPU's logits at every position of the fixture's tokens (one prefill) against llama.cpp's:
 * max |err| and argmax agreement.
 */
async function gpuVsLlamaCpp(
  model: GpuModel,
  fx: FamilyFixture,
): Promise<{ maxErr: number; agree: number }> {
  const fwd = new Forward(model);
  try {
    const T = fx.tokens.length, V = model.config.vocabSize;
    const positions = Array.from({ length: T }, (_, i) => i);
    const flat = await fwd.run({
      tokens: fx.tokens,
      positions,
      slots: positions,
      tableOffsets: new Array(T).fill(0),
      blockTable: Array.from({ length: Math.ceil(T / model.blockSize) }, (_, i) => i),
      logitRows: positions,
    });
    const rows = positions.map((t) => Float64Array.from(flat.subarray(t * V, (t + 1) * V)));
    const agree = rows.filter((r, p) => argmax(r) === argmax(fx.logits[p]!)).length;
    return { maxErr: maxDiff(rows, fx.logits), agree };
  } finally {
    fwd.destroy();
  }
}

/**
 * The GPU forward of `ck` (`paths` kernels, f32 KV cache) against Kiln's float64 reference on
 * the same (dequantized) weights, over the fixture's tokens and a shorter prompt, each followed
 * by `steps` greedy tokens: asserts `verifyModel` passes, returns the worst max |err|. With
 * `llamaCpp` (the fixture's own weights), its logits are also held against llama.cpp's: within
 * `llamaCpp` and the same argmax at every position.
 */
export async function gpuMatchesReference(
  ck: Checkpoint,
  fx: FamilyFixture,
  paths: PathKind,
  steps = 4,
  llamaCpp?: number,
): Promise<number> {
  const ref = await ReferenceModel.load(ck.config, ck.weights);
  const reference: Reference = {
    vocab_size: ck.config.vocabSize,
    prompts: [fx.tokens, fx.tokens.slice(0, 7)].map((p) => ref.prompt(p, steps)),
  };
  const gpu = await testGpu(paths);
  return await withErrorScopes(gpu.device, async () => {
    const model = await GpuModel.fromCheckpoint(gpu, ck, { kvDtype: "f32" });
    try {
      const { passed, results } = await verifyModel(model, reference);
      for (const r of results) {
        console.log(
          `  ${fx.family} ${paths}: prompt ${r.prompt} (${r.tokens} tokens) max|err| ${
            r.max_abs_err.toExponential(2)
          } (bound ${
            r.max_abs_bound.toExponential(2)
          }), greedy ${r.greedy_agree}/${r.greedy_checked}`,
        );
      }
      ok(passed, JSON.stringify(results));
      if (llamaCpp !== undefined) {
        const r = await gpuVsLlamaCpp(model, fx);
        console.log(
          `  ${fx.family} ${paths}: max |GPU - llama.cpp| ${r.maxErr.toExponential(2)}, ` +
            `argmax ${r.agree}/${fx.tokens.length}`,
        );
        ok(r.maxErr < llamaCpp, `max |GPU - llama.cpp| ${r.maxErr}`);
        ok(r.agree === fx.tokens.length, `argmax agrees at ${r.agree} positions`);
      }
      return Math.max(...results.map((r) => r.max_abs_err));
    } finally {
      model.destroy();
    }
  });
}

/**
 * Register the shared tests of a family fixture: the float64 reference on the HF folder and on
 * the GGUF agrees with llama.cpp within `llamaCppBound` (and on every argmax), and the GPU
 * forward of the GGUF (F32) and of the HF folder converted to `mix` matches the reference on
 * the cpu and gpu kernel paths.
 */
export function familyFixtureTests(family: string, llamaCppBound: number, mix: GgufMix): void {
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
      const r = await referenceVsLlamaCpp(await fixtureCheckpoint(family, format), fx);
      console.log(
        `  ${family} ${format}: max |float64 - llama.cpp| ${r.maxErr.toExponential(2)}, ` +
          `argmax ${r.agree}/${r.positions}`,
      );
      ok(r.maxErr < llamaCppBound, `max |float64 - llama.cpp| ${r.maxErr}`);
      ok(r.agree === r.positions, `argmax agrees at ${r.agree} of ${r.positions} positions`);
    });
  }
  for (const weights of ["f32", mix] as const) {
    for (const paths of ["cpu", "gpu"] as const) {
      Deno.test(`${family} ${weights} on the GPU (${paths} paths) matches float64`, async () => {
        const fx = await loadFixture(family);
        const ck = weights === "f32"
          ? await fixtureCheckpoint(family, "gguf")
          : await quantizedCheckpoint(family, mix);
        await gpuMatchesReference(ck, fx, paths, 4, weights === "f32" ? llamaCppBound : undefined);
      });
    }
  }
}
