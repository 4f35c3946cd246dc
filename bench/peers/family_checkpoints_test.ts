/**
 * The committed family fixtures are what `family_checkpoints.ts` and llama.cpp produce now: each
 * family is rebuilt in memory (its GGUF, llama.cpp's logits on it and on every ablation) and its
 * files must match the committed ones byte for byte, its ablation deltas the recorded ones.
 * Needs the peers' packages (node-llama-cpp); `npm test` leaves `bench/peers/` out.
 */
import { deepStrictEqual, equal } from "node:assert/strict";
import { buildFamily, FAMILIES, llamaCppVersion } from "./family_checkpoints.ts";

const ROOT = new URL("../../test/fixtures/families/", import.meta.url).pathname;

for (const name of Object.keys(FAMILIES)) {
  Deno.test(`family_checkpoints: ${name} rebuilds to the committed fixture`, async () => {
    const committed = JSON.parse(await Deno.readTextFile(`${ROOT}${name}/manifest.json`));
    const r = await buildFamily(FAMILIES[name]!(), committed.min_delta, await llamaCppVersion());
    deepStrictEqual(r.failed, []);
    for (const [file, bytes] of Object.entries(r.files)) {
      deepStrictEqual(bytes, await Deno.readFile(`${ROOT}${name}/${file}`), file);
    }
    deepStrictEqual(r.manifest.ablations, committed.ablations);
    equal(JSON.stringify(r.manifest.tensor_map), JSON.stringify(committed.tensor_map));
  });
}
