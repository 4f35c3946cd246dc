/**
 * `WebGpuEngine` on every model family of the family fixtures (`test/fixtures/families/`): started
 * from the fixture's F32 GGUF path with the file's own tokenizer, greedy over the fixture's 50
 * tokens. Its first token is llama.cpp's (the argmax of llama.cpp's last teacher-forced row, when
 * that row's top-2 margin is wide), and its tokens are the float64 reference's up to the first
 * near-tie.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { openCheckpoint } from "../../model/checkpoint.ts";
import { ReferenceModel } from "../../reference/model.ts";
import { WebGpuEngine } from "./engine.ts";
import { collect, request } from "../../../test/support/fortune_engine.ts";
import { testGpu } from "../../../test/support/gpu.ts";

const ROOT = new URL("../../../test/fixtures/families/", import.meta.url).pathname;
const FAMILIES: string[] = JSON.parse(await Deno.readTextFile(`${ROOT}index.json`)).families;
const STEPS = 6;

for (const family of FAMILIES) {
  Deno.test(`WebGpuEngine runs ${family} from its GGUF: llama.cpp's next token, float64's greedy path`, async () => {
    const dir = `${ROOT}${family}/`;
    const manifest = JSON.parse(await Deno.readTextFile(`${dir}manifest.json`));
    const [rows, vocab] = manifest.logits.shape as [number, number];
    const logits = new Float32Array((await Deno.readFile(`${dir}${manifest.logits.file}`)).buffer);
    const last = [...logits.subarray((rows - 1) * vocab, rows * vocab)];
    const sorted = [...last].sort((a, b) => b - a);
    const llamaCpp = last.indexOf(sorted[0]!);
    const files = dirFiles(`${dir}model.gguf`);
    const checkpoint = await openCheckpoint(files);
    const want = (await ReferenceModel.load(checkpoint.config, checkpoint.weights))
      .greedy(manifest.tokens, STEPS);
    const engine = new WebGpuEngine({ files, name: family, gpu: await testGpu(), kvBlocks: 16 });
    await engine.start(0n);
    try {
      const got = await collect(
        engine,
        request(manifest.tokens, { model: family, stop_conditions: { max_tokens: STEPS } }),
      );
      ok(sorted[0]! - sorted[1]! > 0.01, `llama.cpp's margin ${sorted[0]! - sorted[1]!}`);
      equal(got.ids[0], llamaCpp, "the first token is llama.cpp's");
      const tie = want.margins.findIndex((m) => m < 0.1);
      const n = tie < 0 ? STEPS : tie;
      deepStrictEqual(got.ids.slice(0, n), want.tokens.slice(0, n), `${n} steps before a near-tie`);
    } finally {
      await engine.cleanup();
    }
  });
}
