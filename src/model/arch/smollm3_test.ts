/**
 * SmolLM3 on its family fixture (`test/fixtures/families/smollm3`, 4 layers, the last without
 * RoPE): the HF folder and the GGUF agree with llama.cpp's logits, the GPU forward with the
 * float64 reference (the rope_kv dispatch of a layer without RoPE still caches k and v), and
 * RoPE on every layer moves the logits.
 */
import { deepStrictEqual, ok, rejects } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { parseConfig } from "../config.ts";
import { ReferenceModel } from "../../reference/model.ts";
import { checkAblations, familyFixtureTests } from "../../../test/support/family_fixture.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../convert/convert.ts";
import { dirFiles } from "../../adapters/deno/file_source.ts";

const FIXTURE = familyFixtureTests("smollm3", 1e-3, "q8_0");

Deno.test("smollm3: layers without RoPE from HF's flags and interval, and from the GGUF", async () => {
  const hf = await FIXTURE.hf();
  const gguf = await FIXTURE.gguf();
  deepStrictEqual(hf.config.noRopeLayers, [3]);
  deepStrictEqual(gguf.config.noRopeLayers, [3]);
  const base = JSON.parse(
    await Deno.readTextFile(
      new URL("../../../test/fixtures/families/smollm3/hf/config.json", import.meta.url),
    ),
  );
  const { no_rope_layers: _, ...byInterval } = base;
  deepStrictEqual(parseConfig({ ...byInterval, num_hidden_layers: 9 }).noRopeLayers, [3, 7]);
  deepStrictEqual(
    parseConfig({ ...byInterval, no_rope_layer_interval: 2 }).noRopeLayers,
    [1, 3],
  );
  const refused = (c: object, key: string) => {
    try {
      parseConfig(c);
    } catch (e) {
      ok(e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(key));
      return;
    }
    ok(false, `${JSON.stringify(c)} was accepted`);
  };
  refused({ ...base, no_rope_layers: [1, 1, 0] }, "config.no_rope_layers");
  refused({ ...base, no_rope_layers: [1, 1, 2, 0] }, "config.no_rope_layers");
  refused({ ...byInterval, no_rope_layer_interval: 0 }, "config.no_rope_layer_interval");
});

Deno.test("smollm3: a NoPE pattern llama.cpp would not run is refused by the GGUF writer", async () => {
  const ck = await readHfCheckpoint(
    dirFiles(new URL("../../../test/fixtures/families/smollm3/hf", import.meta.url).pathname),
  );
  ck.config.noRopeLayers = [1, 3];
  await rejects(
    writeHfAsGguf(ck, () => {}, {}),
    (e: unknown) => e instanceof EngineError && e.message.includes("config.no_rope_layers"),
  );
});

Deno.test("smollm3: RoPE on every layer moves the float64 logits", async () => {
  await checkAblations(FIXTURE, await FIXTURE.gguf(), {
    "NoPE on layer 3 (RoPE there too)": (ck) => {
      const { noRopeLayers: _, ...everywhere } = ck.config;
      return ReferenceModel.load(everywhere, ck.weights);
    },
  });
});
