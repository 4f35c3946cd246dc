/**
 * Phi-3 on its family fixture (`test/fixtures/families/phi3`: RoPE on 4 of 8 dims of each head;
 * q/k/v and gate/up each one stacked tensor): the HF folder and the GGUF agree with llama.cpp's
 * logits, the GPU forward with the float64 reference, full rotary moves the logits, and the
 * config's sliding window is ignored as llama.cpp ignores it.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { type ModelConfig, parseConfig } from "../config.ts";
import { type Checkpoint, openCheckpoint } from "../checkpoint.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../convert/convert.ts";
import { fileListFiles } from "../../formats/source.ts";
import { ReferenceModel } from "../../reference/model.ts";
import {
  checkAblations,
  familyFixtureTests,
  gpuMatchesReference,
  loadFixture,
  maxDiff,
} from "../../../test/support/family_fixture.ts";

const FIXTURE = familyFixtureTests("phi3", 1e-3, "q8_0");

async function hfConfig(): Promise<Record<string, unknown>> {
  return JSON.parse(
    await Deno.readTextFile(
      new URL("../../../test/fixtures/families/phi3/hf/config.json", import.meta.url),
    ),
  );
}

Deno.test("phi3: stacked tensors as one product each, partial rotary from HF and GGUF", async () => {
  for (const format of ["hf", "gguf"] as const) {
    const ck = await FIXTURE[format]();
    equal(ck.config.rotaryDim, 4, format);
    const l = ck.weights.layers[1]!;
    deepStrictEqual(l.qkv!.shape, [64, 32]);
    deepStrictEqual(l.gateUp!.shape, [64, 32]);
    equal(l.q, undefined);
  }
  const base = await hfConfig();
  // The window is ignored, as llama.cpp ignores it (a window of 7 < 256 would otherwise be refused).
  equal(parseConfig({ ...base, sliding_window: 7, use_sliding_window: true }).arch, "phi3");
  for (const bad of [1.5, 0.1, 0, "half"]) {
    try {
      parseConfig({ ...base, partial_rotary_factor: bad });
      ok(false, `partial_rotary_factor ${bad} was accepted`);
    } catch (e) {
      ok(e instanceof EngineError && e.message.includes("config.partial_rotary_factor"), String(e));
    }
  }
});

Deno.test("phi3: full rotary moves the float64 logits", async () => {
  await checkAblations(FIXTURE, await FIXTURE.gguf(), {
    "partial rotary (full instead)": (ck) => {
      const { rotaryDim: _, ...full } = ck.config;
      return ReferenceModel.load(full, ck.weights);
    },
  });
});

/**
 * The fixture with LongRoPE (the frequencies are held against transformers' in
 * `rope_expectations_test.ts`, the logits against llama.cpp's in `phi3_longrope_test.ts`): 2
 * factors each for the 4 rotated dims, an original context of 64 in a context of 256 (so the long
 * factors apply at the default engine context, the model's), the attention factor computed
 * (sqrt(1 + ln 4 / ln 64)).
 */
const LONGROPE = {
  rope_scaling: { type: "longrope", short_factor: [1, 1.7], long_factor: [2.5, 9] },
  original_max_position_embeddings: 64,
};

const FIXTURE_WEIGHTS =
  new URL("../../../test/fixtures/families/phi3/hf/model.safetensors", import.meta.url).pathname;

async function longRopeCheckpoint(over: object = {}): Promise<Checkpoint> {
  const config = { ...await hfConfig(), ...LONGROPE, ...over };
  return await openCheckpoint(fileListFiles([
    new File([JSON.stringify(config)], "config.json"),
    new File([await Deno.readFile(FIXTURE_WEIGHTS)], "model.safetensors"),
  ]));
}

Deno.test("phi3 LongRoPE: config, GGUF round trip, and each part moves the logits", async () => {
  const tokens = FIXTURE.manifest.tokens;
  const ck = await longRopeCheckpoint();
  const s = ck.config.ropeScaling;
  ok(s.type === "longrope");
  ok(Math.abs(s.attentionFactor - Math.sqrt(1 + Math.log(4) / Math.log(64))) < 1e-15);
  const logits = (await ReferenceModel.load(ck.config, ck.weights)).logits(tokens);
  // Written to a GGUF (factor tensors, attn_factor, original context) and read back: the same.
  const parts: Uint8Array[] = [];
  await writeHfAsGguf(
    await readHfCheckpoint(fileListFiles([
      new File([JSON.stringify({ ...await hfConfig(), ...LONGROPE })], "config.json"),
      new File([await Deno.readFile(FIXTURE_WEIGHTS)], "model.safetensors"),
    ])),
    (b) => void parts.push(b.slice()),
  );
  const gguf = await openCheckpoint(fileListFiles([new File(parts as BlobPart[], "lr.gguf")]));
  const back = gguf.config.ropeScaling;
  ok(back.type === "longrope" && back.originalMaxPositionEmbeddings === 64);
  ok(Math.abs(back.attentionFactor - s.attentionFactor) < 1e-7);
  const again = (await ReferenceModel.load(gguf.config, gguf.weights)).logits(tokens);
  ok(
    maxDiff(logits, again) < 1e-4,
    `GGUF round trip moves the logits by ${maxDiff(logits, again)}`,
  );
  const variants: Record<string, ModelConfig["ropeScaling"]> = {
    "no LongRoPE": { type: "default" },
    "short factors": { ...s, longFactor: s.shortFactor },
    "attention factor 1": { ...s, attentionFactor: 1 },
  };
  for (const [name, ropeScaling] of Object.entries(variants)) {
    const ablated = await ReferenceModel.load({ ...ck.config, ropeScaling }, ck.weights);
    const moved = maxDiff(logits, ablated.logits(tokens));
    console.log(`  ${name}: the logits move by ${moved}`);
    ok(moved >= 0.1, `${name}: moved ${moved}`);
  }
  try {
    await longRopeCheckpoint({
      rope_scaling: { ...LONGROPE.rope_scaling, short_factor: [1, 2, 3] },
    });
    ok(false, "3 short factors for 4 rotated dims were accepted");
  } catch (e) {
    ok(e instanceof EngineError && e.message.includes("rope_scaling.short_factor"), String(e));
  }
});

for (const paths of ["cpu", "gpu"] as const) {
  Deno.test(`phi3 LongRoPE on the GPU (${paths} paths) matches float64`, async () => {
    await gpuMatchesReference(await longRopeCheckpoint(), await loadFixture("phi3"), paths);
  });
}
