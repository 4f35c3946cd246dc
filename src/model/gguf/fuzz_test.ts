/**
 * Seeded, bounded fuzzing of GGUF headers: mutations of a small valid model (random bytes,
 * extreme counts and lengths written over the header, truncations, spliced ranges) must load
 * or fail with an `EngineError`, never anything else, and each within a bound. Scaled and
 * seeded like the other fuzzers (`test/fuzz/fuzz.ts`, `deno task fuzz`).
 */
import { ok } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { blobSource } from "../source.ts";
import { readGgufFile } from "./header.ts";
import { openGguf } from "./load.ts";
import { tinyGguf } from "./test_model.ts";
import { ggufText } from "./tokenizer.ts";
import { fuzzScale, fuzzSeed, rng } from "../../../test/fuzz/fuzz.ts";

const EXTREMES = [
  0n,
  1n,
  7n,
  255n,
  0xffffn,
  0x7fffffffn,
  0xffffffffn,
  2n ** 53n,
  2n ** 63n,
  2n ** 64n - 1n,
];

function mutate(base: Uint8Array, header: number, r: () => number): Uint8Array<ArrayBuffer> {
  let out = new Uint8Array(base);
  const at = (n = Math.min(header, out.length)) => Math.floor(r() * n);
  const edits = 1 + at(4);
  for (let e = 0; e < edits; e++) {
    const kind = at(5);
    const view = new DataView(out.buffer);
    if (kind === 0) {
      out[at()] = at(256);
    } else if (kind === 1 || kind === 2) {
      // A count, length, type or offset field overwritten with an extreme or random value.
      const v = r() < 0.7 ? EXTREMES[at(EXTREMES.length)]! : BigInt(at(2 ** 20));
      const o = Math.min(at(), out.length - 8);
      if (kind === 1) view.setBigUint64(o, v & (2n ** 64n - 1n), true);
      else view.setUint32(o, Number(v & 0xffffffffn), true);
    } else if (kind === 3) {
      out = out.slice(0, at(out.length));
    } else {
      const [s, n, d] = [at(), at(64), at()];
      const copy = new Uint8Array(out.length + n);
      copy.set(out.subarray(0, d));
      copy.set(out.subarray(s, s + n), d);
      copy.set(out.subarray(d), d + n);
      out = copy.slice(0, out.length + n);
    }
    if (out.length < 16) break;
  }
  return out;
}

Deno.test("fuzzed GGUF headers give EngineErrors only, each quickly", async () => {
  const base = tinyGguf({ qType: 8 });
  const header = (await readGgufFile(blobSource(new Blob([base]), "base.gguf"))).dataOffset;
  const seed = fuzzSeed(0x6775_6766);
  const r = rng(seed);
  const deadline = performance.now() + 4000 * fuzzScale();
  let [runs, loaded, refused] = [0, 0, 0];
  while (runs < 400 * fuzzScale() && performance.now() < deadline) {
    runs++;
    const bytes = mutate(base, header, r);
    const t0 = performance.now();
    try {
      const m = await openGguf(
        "f.gguf",
        (name) => Promise.resolve(blobSource(new Blob([bytes]), name)),
      );
      ggufText(m.metadata, m.config.eosTokenIds);
      loaded++;
    } catch (e) {
      ok(e instanceof EngineError, `seed ${seed} run ${runs}: ${(e as Error)?.stack ?? e}`);
      refused++;
    }
    ok(performance.now() - t0 < 2000, `run ${runs} took ${performance.now() - t0} ms`);
  }
  ok(runs >= Math.min(50, 400 * fuzzScale()), `only ${runs} runs`);
  console.log(
    `GGUF header: seed ${seed}, ${runs} mutated headers: ${loaded} loaded, ${refused} refused with EngineError`,
  );
});
