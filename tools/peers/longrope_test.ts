/**
 * Phi-3's LongRoPE as Kiln writes and reads it, against llama.cpp (the family fixture has none):
 * the phi3 fixture's HF folder with LongRoPE added (2 short and 2 long factors for its 4 rotated
 * dims, an original context of 64; llama.cpp's context here is 256, so it takes the long
 * factors, as Kiln does at its default engine context, the model's 256), converted by Kiln
 * to a GGUF (factor tensors, `rope.scaling.attn_factor`, `original_context_length`) and run by
 * llama.cpp; Kiln's float64 reference on the same model must agree. Also with the short factors
 * (an original context of 256).
 * Needs the peers' packages (node-llama-cpp); `npm test` leaves `tools/` out.
 */
import { ok } from "node:assert/strict";
import { openCheckpoint } from "../../src/model/checkpoint.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../src/convert/convert.ts";
import { ReferenceModel } from "../../src/reference/model.ts";
import { fileListFiles } from "../../src/formats/source.ts";
import { llamaCppLogitsEach } from "./llama_cpp.ts";

const DIR = new URL("../../test/fixtures/families/phi3/", import.meta.url).pathname;

for (const original of [64, 256]) {
  Deno.test(`LongRoPE (original context ${original}): Kiln's float64 agrees with llama.cpp`, async () => {
    const manifest = JSON.parse(await Deno.readTextFile(`${DIR}manifest.json`));
    const config = {
      ...JSON.parse(await Deno.readTextFile(`${DIR}hf/config.json`)),
      rope_scaling: {
        type: "longrope",
        short_factor: [1, 1.7],
        long_factor: [2.5, 9],
      },
      original_max_position_embeddings: original,
    };
    const files = () =>
      fileListFiles([
        new File([JSON.stringify(config)], "config.json"),
        new File(
          [Deno.readFileSync(`${DIR}hf/model.safetensors`)],
          "model.safetensors",
        ),
      ]);
    const parts: Uint8Array[] = [];
    // Not the family's name: llama.cpp special-cases vocabularies named like phi3.
    await writeHfAsGguf(
      await readHfCheckpoint(files()),
      (b) => void parts.push(b.slice()),
      {
        name: "kiln-tiny-fixture",
      },
    );
    const path = await Deno.makeTempFile({ suffix: ".gguf" });
    try {
      await Deno.writeFile(
        path,
        new Uint8Array(await new Blob(parts as BlobPart[]).arrayBuffer()),
      );
      const [theirs] = await llamaCppLogitsEach([path], manifest.tokens, 259, {
        f32: true,
      });
      for (
        const ck of [
          await openCheckpoint(files()),
          await openCheckpoint(
            fileListFiles([new File([Deno.readFileSync(path)], "m.gguf")]),
          ),
        ]
      ) {
        const ours = (await ReferenceModel.load(ck.config, ck.weights)).logits(
          manifest.tokens,
        );
        let worst = 0;
        ours.forEach((row, p) =>
          row.forEach((v, t) => worst = Math.max(worst, Math.abs(v - theirs![p]![t]!)))
        );
        console.log(
          `  ${ck.format}: max |float64 - llama.cpp| ${worst.toExponential(2)}`,
        );
        ok(worst < 1e-3, `max |float64 - llama.cpp| ${worst}`);
      }
    } finally {
      await Deno.remove(path);
    }
  });
}
