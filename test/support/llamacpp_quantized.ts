/**
 * A family fixture's llama.cpp-quantized file (`model.q4_k_m.gguf`, `manifest.quantized`: made by
 * llama.cpp's own `llama_model_quantize`, with llama.cpp's logits on it): Kiln's converter picks
 * llama.cpp's type for every tensor of the same checkpoint, and Kiln runs llama.cpp's file on the
 * GPU within `verifyModel`'s bounds of its float64 reference on the file's weights, near llama.cpp's
 * own logits on it (which round each product's input to 8 bits first, as Kiln does not).
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { openCheckpoint } from "../../src/model/checkpoint.ts";
import { ReferenceModel } from "../../src/reference/model.ts";
import { GpuModel } from "../../src/runtime/gpu_model.ts";
import { testGpu } from "./gpu.ts";
import { fileListFiles } from "../../src/formats/source.ts";
import { readGgufFile } from "../../src/formats/gguf/header.ts";
import { planTensors, readHfCheckpoint } from "../../src/convert/convert.ts";
import {
  argmaxAgreement,
  familyFixture,
  gpuLogits,
  maxAbsDiff,
  verifyOnGpu,
} from "./family_fixture.ts";

const DIR = new URL("../fixtures/families/", import.meta.url);
/** float64 with llama.cpp's input rounding against llama.cpp's f32 arithmetic. */
const ROUNDED_TOL = 2e-4;

/**
 * The tests of `family`'s quantized file; `near`: the most |GPU − llama.cpp| allowed. The GPU is
 * held to `verifyModel`'s bounds of float64, or to `gpuBound` where f32 cannot meet those (a
 * family whose arithmetic magnifies rounding: llama.cpp's own distance from float64 says so).
 */
export function llamaCppQuantizedTests(
  family: string,
  near: number,
  agreeAtLeast: number,
  gpuBound?: number,
): void {
  const fx = familyFixture(family);
  const q = (fx.manifest as unknown as { quantized: { file: string; logits: string } }).quantized;
  const read = (name: string) => Deno.readFileSync(new URL(`${family}/${name}`, DIR));
  const file = (name: string) => new File([read(name)], name.split("/").pop()!);
  /** llama.cpp's logits on its quantized file, one row per position. */
  const llamaLogits = (V: number) => {
    const raw = read(q.logits);
    const all = new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
    return fx.manifest.tokens.map((_, t) => all.subarray(t * V, (t + 1) * V));
  };

  Deno.test(`${family}: Kiln's Q4_K_M conversion picks llama.cpp's type for every tensor`, async () => {
    const bytes = read(q.file);
    const theirs = await readGgufFile({
      name: q.file,
      size: bytes.length,
      read: (at: number, n: number) => Promise.resolve(bytes.slice(at, at + n)),
    });
    const ck = await readHfCheckpoint(
      fileListFiles([file("hf/config.json"), file("hf/model.safetensors")]),
    );
    const mine = planTensors(ck, "q4_k_m").map((
      p,
    ): [string, string] => [p.name, p.type.toUpperCase()]);
    const llama = theirs.tensors.map((
      t,
    ): [string, string] => [t.name, String(t.dtype).toUpperCase()]);
    deepStrictEqual(new Map(mine), new Map(llama));
  });

  Deno.test(`${family}: float64 on llama.cpp's Q4_K_M file, inputs rounded as llama.cpp's CPU does, gives llama.cpp's logits`, async () => {
    const ck = await openCheckpoint(fileListFiles([file(q.file)]));
    const ref = await ReferenceModel.load(ck.config, ck.weights, { testLlamaCppRounding: true });
    const rows = ref.logits(fx.manifest.tokens);
    const err = maxAbsDiff(rows, llamaLogits(ck.config.vocabSize));
    console.log(`  ${family} Q4_K_M: max |float64 (rounded) - llama.cpp| ${err.toExponential(2)}`);
    ok(err < ROUNDED_TOL, `max |float64 - llama.cpp| ${err}`);
    // Without the rounding, the same reference is far off: the check can tell the two apart.
    const plain = (await ReferenceModel.load(ck.config, ck.weights)).logits(fx.manifest.tokens);
    ok(maxAbsDiff(plain, llamaLogits(ck.config.vocabSize)) > 10 * ROUNDED_TOL);
  });

  Deno.test(`${family}: llama.cpp's own Q4_K_M file runs on the GPU within bounds of float64, near llama.cpp`, async () => {
    const ck = await openCheckpoint(fileListFiles([file(q.file)]));
    const tokens = fx.manifest.tokens, llama = llamaLogits(ck.config.vocabSize);
    const check = async (model: GpuModel) => {
      const rows = await gpuLogits(model, tokens);
      const err = maxAbsDiff(rows, llama), agree = argmaxAgreement(rows, llama);
      console.log(
        `  ${family} Q4_K_M: max |GPU - llama.cpp| ${
          err.toExponential(2)
        }, argmax ${agree}/${tokens.length}`,
      );
      ok(err < near, `max |GPU - llama.cpp| ${err}`);
      ok(agree >= agreeAtLeast, `argmax agrees at ${agree} positions`);
      if (gpuBound === undefined) return;
      const exact = (await ReferenceModel.load(ck.config, ck.weights)).logits(tokens);
      const off = maxAbsDiff(rows, exact);
      console.log(`  ${family} Q4_K_M: max |GPU - float64| ${off.toExponential(2)}`);
      ok(off < gpuBound, `max |GPU - float64| ${off}`);
    };
    if (gpuBound === undefined) {
      await verifyOnGpu(ck, "cpu", [tokens, tokens.slice(0, 7)], 4, check);
      return;
    }
    const gpu = await testGpu("cpu");
    const model = await GpuModel.fromCheckpoint(gpu, ck, { kvDtype: "f32" });
    try {
      await check(model);
    } finally {
      model.destroy();
    }
  });
}
