/**
 * The committed family fixtures are what `family_checkpoints.ts` and llama.cpp produce now: each
 * family is rebuilt in memory (its GGUF, llama.cpp's logits on it and on every ablation) and its
 * GGUF, HF weights and config must match the committed ones byte for byte, its tensor map too,
 * its logits within 1e-4 and its ablation deltas within 1e-3 of the recorded ones (ggml's CPU
 * kernels vary by CPU).
 * Needs the peers' packages (node-llama-cpp); `npm test` leaves `bench/peers/` out.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { buildFamily, FAMILIES, llamaCppVersion } from "./family_checkpoints.ts";

const ROOT = new URL("../../test/fixtures/families/", import.meta.url).pathname;

/**
 * Logits may differ in the last bits on another CPU (ggml picks a kernel variant per CPU, which
 * sums in another order): their largest difference beyond 1e-4, else 0.
 */
function maxDiff(a: Uint8Array, b: Uint8Array): number {
  const x = new Float32Array(a.slice().buffer), y = new Float32Array(b.slice().buffer);
  if (x.length !== y.length) return Infinity;
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i]! - y[i]!));
  return m > 1e-4 ? m : 0;
}

for (const name of Object.keys(FAMILIES)) {
  Deno.test(`family_checkpoints: ${name} rebuilds to the committed fixture`, async () => {
    const committed = JSON.parse(await Deno.readTextFile(`${ROOT}${name}/manifest.json`));
    const r = await buildFamily(FAMILIES[name]!(), committed.min_delta, await llamaCppVersion());
    deepStrictEqual(r.failed, []);
    for (const [file, bytes] of Object.entries(r.files)) {
      const old = await Deno.readFile(`${ROOT}${name}/${file}`);
      if (!/^logits\..*f32$/.test(file)) deepStrictEqual(bytes, old, file);
      else equal(maxDiff(bytes, old), 0, file);
    }
    type Ablations = { feature: string; max_abs_delta: number }[];
    const deltas = (a: Ablations) => a.map((x) => [x.feature, x.max_abs_delta] as const);
    const now = deltas(r.manifest.ablations as Ablations), then = deltas(committed.ablations);
    deepStrictEqual(now.map(([f]) => f), then.map(([f]) => f));
    now.forEach(([f, d], i) =>
      ok(Math.abs(d - then[i]![1]) <= 1e-3, `${f}: ${d} vs ${then[i]![1]}`)
    );
    equal(JSON.stringify(r.manifest.tensor_map), JSON.stringify(committed.tensor_map));
  });
}
