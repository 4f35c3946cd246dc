/**
 * LFM2 on its family fixture (`test/fixtures/families/lfm2`): three gated short-convolution
 * layers around one attention layer. The HF folder and the GGUF agree with llama.cpp's logits,
 * the GPU forward with the float64 reference (whole prompt and in chunks that carry the
 * convolution state), and each feature moves the logits.
 */
import type { LayerStep } from "./mod.ts";
import { ReferenceModel } from "../../reference/model.ts";
import {
  type Ablation,
  checkAblations,
  familyFixtureTests,
} from "../../../test/support/family_fixture.ts";
import { llamaCppQuantizedTests } from "../../../test/support/llamacpp_quantized.ts";

const FIXTURE = familyFixtureTests("lfm2", 1e-3, "q8_0");

Deno.test("lfm2: the convolution and the attention layer's q/k norm each move the logits", async () => {
  const ck = await FIXTURE.gguf();
  const dropped = (op: LayerStep["op"]): Ablation => (ck) =>
    ReferenceModel.load(ck.config, ck.weights, {
      testRecipe: (_l, own) => own.filter((s) => s.op !== op),
    });
  await checkAblations(FIXTURE, ck, {
    "the q/k norm": dropped("qk_norm"),
    "the convolution": dropped("short_conv"),
  });
});

// llama.cpp rounds each product's input to 8 bits and Kiln does not: 2.0 and 48/50 measured (the
// float64 test shows the rounding accounts for it to 2e-6).
llamaCppQuantizedTests("lfm2", 4, 45);
