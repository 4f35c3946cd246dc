/**
 * A single `.gguf` file is enough for the engine: fortune quantized to Q4_K_M on disk, started
 * from its path, its tokenizer read from the file, greedy tokens equal to float64 on the
 * dequantized weights.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { quantizeToFile } from "../../adapters/deno/quantize.ts";
import { openCheckpoint } from "../../model/checkpoint.ts";
import { ReferenceModel } from "../../reference/model.ts";
import { loadText } from "../../text/load.ts";
import { WebGpuEngine } from "./engine.ts";
import { collect, FORTUNE, request } from "../../../test/support/fortune_engine.ts";

Deno.test("WebGpuEngine runs a GGUF file from its path, with the file's own tokenizer", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/fortune-q4_k_m.gguf`;
  try {
    await quantizeToFile(FORTUNE, path, "q4_k_m");
    const files = dirFiles(path);
    const text = await loadText(files);
    const prompt = text.tokenizer.encode("You will");
    equal(prompt[0], 256, "the file's tokenizer adds fortune's BOS");
    equal(text.tokenizer.decode(prompt, { skipSpecial: true }), "You will");
    const checkpoint = await openCheckpoint(files);
    const ref = await ReferenceModel.load(checkpoint.config, checkpoint.weights);
    const want = ref.greedy(prompt, 8);
    const engine = new WebGpuEngine({ files, name: "fortune-q4_k_m", kvBlocks: 16 });
    const config = await engine.start(0n);
    try {
      equal(config.runtime_data?.weights_format, "gguf");
      equal(config.runtime_data?.weights_dtype, "Q4_K");
      const got = await collect(engine, request(prompt));
      // Compared up to the first near-tie of the reference (an f16 KV cache rounds logits).
      const tie = want.margins.findIndex((m) => m < 0.1);
      const n = tie < 0 ? 8 : tie;
      ok(n >= 3, `only ${n} steps before a near-tie`);
      deepStrictEqual(got.ids.slice(0, n), want.tokens.slice(0, n));
    } finally {
      await engine.cleanup();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
