/**
 * OLMo 3 on its family fixture (`test/fixtures/families/olmo3`): OLMo 2's layer (`olmo2.ts`)
 * with a sliding window on the layers `layer_types` marks (HF) or the GGUF's per-layer bool
 * pattern says (llama.cpp writes it as olmo2). The HF folder and the GGUF agree with llama.cpp's
 * logits, the GPU forward with the float64 reference; the window moves the logits; a window
 * longer than the context and a bad `layer_types` are refused naming their keys.
 */
import { deepStrictEqual, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { type ModelConfig, parseConfig } from "../config.ts";
import { ReferenceModel } from "../../reference/model.ts";
import { checkAblations, familyFixtureTests } from "../../../test/support/family_fixture.ts";

const FIXTURE = familyFixtureTests("olmo3", 1e-3, "q8_0");

Deno.test("olmo3: the window on layer 0 only, from HF and GGUF", async () => {
  for (const format of ["hf", "gguf"] as const) {
    const c = (await FIXTURE[format]()).config;
    equal(c.arch, "olmo2", format);
    equal(c.slidingWindow, 8, format);
    deepStrictEqual(c.slidingLayers, [true, false], format);
  }
});

Deno.test("olmo3: dropping the sliding window moves the float64 logits", async () => {
  await checkAblations(FIXTURE, await FIXTURE.gguf(), {
    "the window": (ck) => {
      const { slidingWindow: _w, slidingLayers: _l, ...rest } = ck.config;
      return ReferenceModel.load(rest as ModelConfig, ck.weights);
    },
  });
});

Deno.test("olmo3: bad window settings are refused naming the key", async () => {
  const base = JSON.parse(
    await Deno.readTextFile(
      new URL("../../../test/fixtures/families/olmo3/hf/config.json", import.meta.url),
    ),
  );
  const refused = (json: Record<string, unknown>, key: string) =>
    throws(
      () => parseConfig(JSON.stringify(json)),
      (e) => e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(key),
    );
  refused({ ...base, sliding_window: 4096 }, "sliding_window");
  refused({ ...base, layer_types: ["sliding_attention"] }, "layer_types");
  refused({ ...base, layer_types: ["sliding_attention", "chunked"] }, "layer_types[1]");
  // Without layer_types, every layer but each 4th slides (OLMo 3's default).
  const { layer_types: _t, ...plain } = base;
  deepStrictEqual(
    parseConfig(JSON.stringify({ ...plain, num_hidden_layers: 5 })).slidingLayers,
    [true, true, true, false, true],
  );
});
