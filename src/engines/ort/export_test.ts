/**
 * The ONNX fortune export the OrtEngine tests run (shared fixture or `.cache` export) against
 * `models/fortune/reference.json` (float64): logits at every prompt position, through
 * onnxruntime-web's wasm EP.
 */
import { ok } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { cachedOnnxFortune, SHARED_ONNX_FORTUNE } from "../../../test/support/onnx_fortune.ts";
import { loadOrt, openSession } from "./session.ts";
import { cpuRow } from "./sampling.ts";

interface RefPrompt {
  input_ids: number[];
  logits: number[][];
}

const reference = JSON.parse(
  await Deno.readTextFile(new URL("../../../models/fortune/reference.json", import.meta.url)),
) as { prompts: RefPrompt[] };

// F32 graph: bounds set from the measured error, max 2.1e-5 (fixture) and 2.8e-5 (own export),
// relative L2 3.7e-7 and 3.8e-7: 1e-4 and 1.5e-6, 3.5x and 4x the worst (the README's general
// F32 bound, 1e-3, let a RoPE base 0.1 % off through: 4.4e-4, `tools/peers/to_onnx_test.ts`).
// F16 graph (f16 weights and activations, ORT's f16 arithmetic): the F16 bounds, max |error|
// <= 3e-2, relative L2 <= 1e-2.
// Both the shared fixture and Kiln's own export (what a clean clone uses). Without
// `../shared` the fixture's tests are skipped (and counted so), not run on Kiln's own export.
const VARIANTS = [["model", 1e-4, 1.5e-6], ["model_fp16", 3e-2, 1e-2]] as const;
const SOURCES = [
  ["fixture", () => Promise.resolve(SHARED_ONNX_FORTUNE!)],
  ["own export", cachedOnnxFortune],
] as const;
for (const [variant, maxTol, l2Tol] of VARIANTS) {
  for (const [what, dir] of SOURCES) {
    Deno.test({
      name: `the ONNX ${what}'s ${variant} logits match the float64 reference`,
      ignore: what === "fixture" && SHARED_ONNX_FORTUNE === undefined,
    }, async () => {
      const ort = await loadOrt();
      const { session, layout } = await openSession(ort, {
        files: dirFiles(await dir()),
        variant,
        ep: "wasm",
        preferF16: false,
      });
      try {
        let worst = 0, num = 0, den = 0;
        for (const p of reference.prompts) {
          const n = p.input_ids.length;
          const ids = (v: number[]) =>
            new ort.Tensor("int64", BigInt64Array.from(v, BigInt), [1, n]);
          const feeds: Record<string, InstanceType<typeof ort.Tensor>> = {
            input_ids: ids(p.input_ids),
            attention_mask: ids(new Array<number>(n).fill(1)),
            position_ids: ids(p.input_ids.map((_, i) => i)),
          };
          const dims = [1, layout.kvHeads, 0, layout.headDim];
          const empty = layout.kvType === "float16"
            ? new ort.Tensor("float16", new Uint16Array(0), dims)
            : new ort.Tensor("float32", new Float32Array(0), dims);
          for (let i = 0; i < layout.layers; i++) {
            feeds[`past_key_values.${i}.key`] = feeds[`past_key_values.${i}.value`] = empty;
          }
          const out = await session.run(feeds);
          for (let t = 0; t < n; t++) {
            const got = cpuRow(out.logits!, t, layout.vocab);
            p.logits[t]!.forEach((r, v) => {
              const d = got[v]! - r;
              worst = Math.max(worst, Math.abs(d));
              num += d * d;
              den += r * r;
            });
          }
        }
        const l2 = Math.sqrt(num / den);
        console.log(
          `${what} ${variant}: max |error| ${worst.toExponential(2)}, relative L2 ${
            l2.toExponential(2)
          }`,
        );
        ok(worst <= maxTol, `max |error| ${worst} > ${maxTol}`);
        ok(l2 <= l2Tol, `relative L2 ${l2} > ${l2Tol}`);
      } finally {
        await session.release();
      }
    });
  }
}
