/**
 * Granite 4.0-H on its family fixture (`test/fixtures/families/granitehybrid`): three Mamba2
 * layers around one attention layer without RoPE, Granite's multipliers. The HF folder and the
 * GGUF agree with llama.cpp's logits, the GPU forward with the float64 reference, and each
 * Mamba2 piece moves the logits.
 */
import type { LayerStep } from "./mod.ts";
import { ReferenceModel } from "../../reference/model.ts";
import {
  type Ablation,
  checkAblations,
  familyFixtureTests,
} from "../../../test/support/family_fixture.ts";
import { llamaCppQuantizedTests } from "../../../test/support/llamacpp_quantized.ts";

const FIXTURE = familyFixtureTests("granitehybrid", 1e-3, "q8_0");

Deno.test("granitehybrid: the Mamba2 layers and the attention layer each move the logits", async () => {
  const ck = await FIXTURE.gguf();
  const dropped = (op: LayerStep["op"]): Ablation => (ck) =>
    ReferenceModel.load(ck.config, ck.weights, {
      testRecipe: (_l, own) => own.filter((s) => s.op !== op),
    });
  await checkAblations(FIXTURE, ck, {
    "the Mamba2 mixer": dropped("mamba2"),
    "the attention": dropped("attention"),
  });
});

// llama.cpp rounds each product's input to 8 bits and Kiln does not: 0.26 and 50/50 measured.
llamaCppQuantizedTests("granitehybrid", 1, 45);
