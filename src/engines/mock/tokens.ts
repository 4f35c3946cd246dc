/** Deterministic token and block-hash functions for the mock engine. */

/** 32-bit FNV-1a over token ids: the prompt's seed. */
export function promptSeed(tokens: readonly number[]): number {
  let h = 0x811c9dc5;
  for (const t of tokens) {
    h ^= t >>> 0;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The `step`-th generated token for a prompt seed (a splitmix-style mix), in `[0, vocab)`. */
export function mockToken(seed: number, step: number, vocabSize: number): number {
  let z = (seed + Math.imul(step + 1, 0x9e3779b9)) >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
  return ((z ^ (z >>> 16)) >>> 0) % vocabSize;
}

export { blockHashes } from "../block_hash.ts";
