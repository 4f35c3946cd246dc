/** Token bitmasks for the sampler's tests: pseudo-random rows over odd vocab sizes. */
import { tokenBitmask } from "../../src/gpu/token_mask_bits.ts";
import { seeded } from "./kernel_harness.ts";

/** A pseudo-random row keeping about `keep` of the tokens (at least one). */
export function randomMask(vocab: number, seed: number, keep: number): Uint32Array {
  const r = seeded(seed, vocab);
  const ids = [...r.keys()].filter((i) => (r[i]! + 1) / 2 < keep);
  return tokenBitmask(vocab, ids.length > 0 ? ids : [vocab - 1]);
}
