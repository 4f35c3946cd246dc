/**
 * The attention knobs read from GGUF metadata: window layers given as a pattern count, as one
 * boolean per layer (llama.cpp's OLMo 3 files) or by the family's default; bad values refused
 * naming the key. (The HF side is in `config_test.ts`; both sides on real files in the Gemma
 * fixtures' tests.)
 */
import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { ARCHS } from "./arch/mod.ts";
import { ggufAttentionKnobs, windowOf } from "./attention_knobs.ts";
import { GgufMetadata } from "../formats/gguf/metadata.ts";

const DIMS = { hiddenSize: 16, numHeads: 2, numLayers: 4, maxPositions: 64 };
const read = (arch: string, meta: Record<string, unknown>) =>
  ggufAttentionKnobs(new GgufMetadata(meta), "x.", ARCHS.get(arch)!, DIMS);

Deno.test("GGUF window layers: a pattern count, booleans per layer, or the family's default", () => {
  const counted = read("gemma3", {
    "x.attention.sliding_window": 8,
    "x.attention.sliding_window_pattern": 3,
  });
  deepStrictEqual(counted.slidingLayers, [true, true, false, true]);
  deepStrictEqual(
    read("llama", {
      "x.attention.sliding_window": 8,
      "x.attention.sliding_window_pattern": [false, true, true, false],
    })
      .slidingLayers,
    [false, true, true, false],
  );
  deepStrictEqual(read("gemma2", { "x.attention.sliding_window": 8 }).slidingLayers, [
    true,
    false,
    true,
    false,
  ]);
  const everyLayer = read("mistral", { "x.attention.sliding_window": 8 });
  deepStrictEqual([0, 1, 2, 3].map((l) => windowOf(everyLayer, l)), [8, 8, 8, 8]);
  deepStrictEqual(read("mistral", {}), {});
  equal(read("gemma2", { "x.attn_logit_softcapping": 50 }).attnSoftcap, 50);
});

Deno.test("GGUF attention scale: the key, else llama.cpp's rule for Gemma 2's 46-layer size", () => {
  const arch = ARCHS.get("gemma2")!;
  const at = (numLayers: number, meta: Record<string, unknown> = {}) =>
    ggufAttentionKnobs(new GgufMetadata(meta), "x.", arch, { ...DIMS, numLayers }).attnScale;
  equal(at(46), 1 / Math.sqrt(8));
  equal(at(26), undefined);
  equal(at(46, { "x.attention.scale": 0.25 }), 0.25);
});

Deno.test("GGUF attention knobs: bad values are refused naming the key", () => {
  const bad = (meta: Record<string, unknown>, key: string) =>
    throws(() => read("gemma2", meta), (e: unknown) => {
      ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
      ok(e.message.includes(key), `${e.message} should name ${key}`);
      return true;
    });
  bad({ "x.attention.sliding_window": 65 }, "x.attention.sliding_window");
  bad(
    { "x.attention.sliding_window": 8, "x.attention.sliding_window_pattern": [true] },
    "sliding_window_pattern",
  );
  bad(
    { "x.attention.sliding_window": 8, "x.attention.sliding_window_pattern": 0 },
    "sliding_window_pattern",
  );
  bad({ "x.final_logit_softcapping": 0 }, "x.final_logit_softcapping");
  bad({ "x.attention.scale": -1 }, "x.attention.scale");
});
