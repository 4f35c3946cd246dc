/**
 * Phi-3's LongRoPE against llama.cpp (`test/fixtures/rope/phi3_longrope`, made by
 * `tools/fixtures/phi3_longrope.ts`): a tiny Phi-3 GGUF laid out as llama.cpp's converter writes a
 * 128k model (context 4096 over an original 512), and llama.cpp's logits in a context of 256
 * (short factors) and 1024 (long ones). Kiln, built for the same engine context (the float64
 * reference's `context`, the GPU model's KV cache), must match both: LongRoPE's factors follow
 * the engine's context as llama.cpp's follow its own, not the model's trained context.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { type Checkpoint, openCheckpoint } from "../checkpoint.ts";
import { GpuModel } from "../../runtime/gpu_model.ts";
import { ReferenceModel } from "../../reference/model.ts";
import { fileListFiles } from "../../formats/source.ts";
import { type Reference, verifyModel } from "../../reference/verify.ts";
import { testGpu, withErrorScopes } from "../../../test/support/gpu.ts";

const DIR = new URL("../../../test/fixtures/rope/phi3_longrope/", import.meta.url).pathname;

interface Manifest {
  tokens: number[];
  vocab: number;
  runs: { context: number; factors: "short" | "long"; file: string }[];
}

const manifest: Manifest = JSON.parse(await Deno.readTextFile(`${DIR}manifest.json`));

async function checkpoint(): Promise<Checkpoint> {
  return await openCheckpoint(
    fileListFiles([new File([await Deno.readFile(`${DIR}model.gguf`)], "model.gguf")]),
  );
}

async function llamaCpp(file: string): Promise<Float32Array[]> {
  const all = new Float32Array((await Deno.readFile(`${DIR}${file}`)).buffer);
  return manifest.tokens.map((_, p) => all.subarray(p * manifest.vocab, (p + 1) * manifest.vocab));
}

function maxDiff(a: ArrayLike<number>[], b: ArrayLike<number>[]): number {
  let m = 0;
  a.forEach((row, p) => {
    for (let t = 0; t < row.length; t++) m = Math.max(m, Math.abs(row[t]! - b[p]![t]!));
  });
  return m;
}

/** float64 against llama.cpp: measured 1.95e-5 (context 256) and 2.45e-5 (1024). */
const FLOAT64_BOUND = 1e-4;

Deno.test("phi3 LongRoPE GGUF: the file's layout reads as llama.cpp's converter writes it", async () => {
  const ck = await checkpoint();
  const s = ck.config.ropeScaling;
  ok(s.type === "longrope", s.type);
  equal(ck.config.maxPositionEmbeddings, 4096);
  equal(s.originalMaxPositionEmbeddings, 512);
  ok(Math.abs(s.attentionFactor - Math.sqrt(1 + Math.log(8) / Math.log(512))) < 1e-7);
  // Kiln's writer stored both lists as given (f32), whichever the engine will use.
  deepStrictEqual(s.shortFactor, [1, Math.fround(1.7)]);
  deepStrictEqual(s.longFactor, [2.5, 9]);
  try {
    await ReferenceModel.load(ck.config, ck.weights, { context: 4097 });
    ok(false, "a context beyond the model's was accepted");
  } catch (e) {
    ok(e instanceof EngineError && e.message.includes("context 4097"), String(e));
  }
});

for (const run of manifest.runs) {
  const name = `phi3 LongRoPE at context ${run.context} (${run.factors} factors)`;
  Deno.test(`${name}: float64 matches llama.cpp`, async () => {
    const ck = await checkpoint();
    const theirs = await llamaCpp(run.file);
    const ref = await ReferenceModel.load(ck.config, ck.weights, { context: run.context });
    const err = maxDiff(ref.logits(manifest.tokens), theirs);
    console.log(`  max |float64 - llama.cpp| ${err.toExponential(2)}`);
    ok(err < FLOAT64_BOUND, `max |float64 - llama.cpp| ${err}`);
  });

  if (run.factors === "short") {
    Deno.test(`${name}: rejects a planted error: the factors chosen by the model's context`, async () => {
      // Issue 39's bug: a 4096-position model over an original 512 took the long factors at
      // every engine context. The reference at the model's whole context does exactly that.
      const ck = await checkpoint();
      const wrong = await ReferenceModel.load(ck.config, ck.weights, { context: 4096 });
      const err = maxDiff(wrong.logits(manifest.tokens), await llamaCpp(run.file));
      console.log(`  long factors at context ${run.context}: max |float64 - llama.cpp| ${err}`);
      ok(err > 100 * FLOAT64_BOUND, `the long factors pass at context ${run.context}: ${err}`);
    });
  }

  Deno.test(`${name}: the GPU matches float64 and llama.cpp within verify's bounds`, async () => {
    const ck = await checkpoint();
    const gpu = await testGpu("cpu");
    await withErrorScopes(gpu.device, async () => {
      const kvBlocks = run.context / 16;
      const model = await GpuModel.fromCheckpoint(gpu, ck, { kvDtype: "f32", kvBlocks });
      try {
        equal(model.context, run.context);
        const ref = await ReferenceModel.load(ck.config, ck.weights, { context: model.context });
        const prompt = manifest.tokens.slice(0, 24);
        const fromFloat64: Reference = {
          vocab_size: manifest.vocab,
          prompts: [ref.prompt(prompt, 4)],
        };
        const theirs = await llamaCpp(run.file);
        const fromLlamaCpp: Reference = {
          vocab_size: manifest.vocab,
          reference_error: FLOAT64_BOUND,
          prompts: [{
            input_ids: manifest.tokens,
            logits: theirs.map((r) => [...r]),
            greedy_tokens: [],
            greedy_margins: [],
            greedy_step_logits: [],
          }],
        };
        for (const [what, reference] of [["float64", fromFloat64], ["llama.cpp", fromLlamaCpp]]) {
          const { passed, results } = await verifyModel(model, reference as Reference);
          const r = results[0]!;
          console.log(
            `  GPU vs ${what}: max|err| ${r.max_abs_err.toExponential(2)} ` +
              `(bound ${r.max_abs_bound.toExponential(2)})`,
          );
          ok(passed, `${what}: ${JSON.stringify(results)}`);
        }
      } finally {
        model.destroy();
      }
    });
  });
}
