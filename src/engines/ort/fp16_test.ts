/**
 * The fp16 variant on the WebGPU EP (the default where the adapter has shader-f16): ORT computes
 * in f16, so its greedy tokens are compared with the float64 reference's only up to the first
 * step whose reference margin (top-1 minus top-2 logit) is under 0.2, past which a near-tie may
 * flip and the continuations part.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { collect, request } from "../../../test/support/fortune_engine.ts";
import { onnxFortune } from "../../../test/support/onnx_fortune.ts";
import { OrtEngine } from "./engine.ts";

interface RefPrompt {
  input_ids: number[];
  greedy_tokens: number[];
  greedy_margins: number[];
}

const reference = JSON.parse(
  await Deno.readTextFile(new URL("../../../models/fortune/reference.json", import.meta.url)),
) as { prompts: RefPrompt[] };

const CLEAR = 0.2;
const STEPS = 6;

const f16 = (await navigator.gpu.requestAdapter())?.features.has("shader-f16") ?? false;

// Without shader-f16 (SwiftShader, llvmpipe) there is no fp16 variant to run: skipped, and
// counted as skipped (the f32 variant is engine_test's).
Deno.test({
  name: "fp16 variant (WebGPU EP): the reference's greedy tokens while margins are clear",
  ignore: !f16,
}, async () => {
  const e = new OrtEngine({ files: dirFiles(await onnxFortune()), name: "fortune" });
  const config = await e.start(0n);
  try {
    equal(config.runtime_data?.variant, "model_fp16", "the default variant with shader-f16");
    equal(config.runtime_data?.kv_dtype, "float16");
    let compared = 0;
    for (const p of reference.prompts.slice(0, 3)) {
      const got = (await collect(
        e,
        request(p.input_ids, { stop_conditions: { max_tokens: STEPS } }),
      )).ids;
      for (let i = 0; i < STEPS; i++) {
        if (p.greedy_margins[i]! < CLEAR) break;
        equal(got[i], p.greedy_tokens[i], `prompt ${p.input_ids.length} tokens, step ${i}`);
        compared++;
      }
    }
    console.log(`fp16: ${compared} greedy tokens with margin >= ${CLEAR} compared, all equal`);
    ok(compared >= 6, `only ${compared} tokens had clear margins`);
  } finally {
    await e.cleanup();
  }
});
