/**
 * Granite on its family fixture (`test/fixtures/families/granite`: embedding multiplier 4,
 * residual multiplier 0.5, attention multiplier 1/8, logits divided by 2): the HF folder and the
 * GGUF agree with llama.cpp's logits, the GPU forward with the float64 reference, and each
 * multiplier, dropped, moves the logits.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { type ModelConfig, parseConfig } from "../config.ts";
import { ReferenceModel } from "../../reference/model.ts";
import {
  type Ablation,
  checkAblations,
  familyFixtureTests,
} from "../../../test/support/family_fixture.ts";

const FIXTURE = familyFixtureTests("granite", 1e-3, "q8_0");

const FIELDS = ["embeddingScale", "residualScale", "attnScale", "logitScale"] as const;

Deno.test("granite: the multipliers from config.json and from the GGUF", async () => {
  for (const format of ["hf", "gguf"] as const) {
    const c = (await FIXTURE[format]()).config;
    deepStrictEqual(FIELDS.map((f) => c[f]), [4, 0.5, 0.125, 2], format);
  }
  const base = JSON.parse(
    await Deno.readTextFile(
      new URL("../../../test/fixtures/families/granite/hf/config.json", import.meta.url),
    ),
  );
  for (const key of ["embedding_multiplier", "residual_multiplier", "logits_scaling"]) {
    for (const bad of [0, -1, "2"]) {
      try {
        parseConfig({ ...base, [key]: bad });
        ok(false, `${key} ${bad} was accepted`);
      } catch (e) {
        ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
        ok(e.message.includes(`config.${key}`), e.message);
      }
    }
  }
});

Deno.test("granite: dropping each multiplier moves the float64 logits", async () => {
  const without = (field: (typeof FIELDS)[number]): Ablation => (ck) => {
    const { [field]: _, ...rest } = ck.config;
    return ReferenceModel.load(rest as ModelConfig, ck.weights);
  };
  await checkAblations(
    FIXTURE,
    await FIXTURE.gguf(),
    Object.fromEntries(FIELDS.map((field) => [field, without(field)])),
  );
});
