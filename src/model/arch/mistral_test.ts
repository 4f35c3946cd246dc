/**
 * Mistral's sliding window, honoured (it was refused): a tiny random checkpoint with a window of
 * 5 keys (odd, shorter than a KV block) over prompts up to 40 tokens. The float64 reference
 * with the window differs from the one without it by far more than verify's bounds, and the GPU
 * forward (both kernel paths, prefill and decode) matches the windowed reference; the window
 * survives a conversion to GGUF.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { maxAbsDiff, verifyOnGpu } from "../../../test/support/family_fixture.ts";
import { tinyFamilyFiles } from "../../../test/support/tiny_family.ts";
import { type Checkpoint, openCheckpoint } from "../checkpoint.ts";
import type { ModelConfig } from "../config.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../convert/convert.ts";
import { ReferenceModel } from "../../reference/model.ts";
import { fileListFiles } from "../../formats/source.ts";
import { SHAPE } from "../../../test/support/window_model.ts";

const WINDOW = 5;
const PROMPTS = [
  Array.from({ length: 40 }, (_, i) => (i * 37 + 5) % SHAPE.vocabSize),
  [1, 17, 40, 9, 3, 3, 60],
];

function files(): File[] {
  const { files, config } = tinyFamilyFiles({ arch: "mistral", shape: SHAPE, std: 0.5 });
  const withWindow = { ...config, sliding_window: WINDOW };
  return [new File([JSON.stringify(withWindow)], "config.json"), files[1]!];
}

const safetensors = (): Promise<Checkpoint> => openCheckpoint(fileListFiles(files()));

Deno.test("mistral: the window is read, survives GGUF, and moves the float64 logits", async () => {
  const ck = await safetensors();
  equal(ck.config.slidingWindow, WINDOW);
  const parts: Uint8Array[] = [];
  await writeHfAsGguf(await readHfCheckpoint(fileListFiles(files())), (b) => void parts.push(b));
  const gguf = await openCheckpoint(fileListFiles([new File(parts as BlobPart[], "m.gguf")]));
  equal(gguf.config.slidingWindow, WINDOW);
  const { slidingWindow: _, ...unwindowed } = ck.config;
  const ref = await ReferenceModel.load(ck.config, ck.weights);
  const plain = await ReferenceModel.load(unwindowed as ModelConfig, ck.weights);
  const moved = maxAbsDiff(ref.logits(PROMPTS[0]!), plain.logits(PROMPTS[0]!));
  console.log(`  without the window: the logits move by ${moved.toFixed(3)}`);
  ok(moved >= 0.1, `${moved}`);
});

for (const paths of ["cpu", "gpu"] as const) {
  Deno.test(`mistral with a window on the GPU (${paths} paths) matches float64`, async () => {
    await verifyOnGpu(await safetensors(), paths, PROMPTS, 6);
  });
}
