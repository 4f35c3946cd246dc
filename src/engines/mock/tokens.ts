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

const FNV64_OFFSET = 0xcbf29ce484222325n;
const FNV64_PRIME = 0x100000001b3n;
const MASK64 = (1n << 64n) - 1n;

/** 64-bit FNV-1a over a parent hash and a block's tokens: a prefix-chained block hash. */
export function blockHash(parent: bigint | null, tokens: readonly number[]): bigint {
  let h = FNV64_OFFSET;
  const mix = (v: bigint) => {
    for (let i = 0n; i < 64n; i += 8n) {
      h ^= (v >> i) & 0xffn;
      h = (h * FNV64_PRIME) & MASK64;
    }
  };
  mix(parent ?? 0n);
  for (const t of tokens) mix(BigInt(t >>> 0));
  return h;
}

/** Hashes of the full blocks of `tokens`, each chained to its parent. */
export function blockHashes(tokens: readonly number[], blockSize: number): bigint[] {
  const out: bigint[] = [];
  let parent: bigint | null = null;
  for (let i = 0; i + blockSize <= tokens.length; i += blockSize) {
    parent = blockHash(parent, tokens.slice(i, i + blockSize));
    out.push(parent);
  }
  return out;
}
