/** Prefix-chained 64-bit hashes of KV blocks (FNV-1a over the parent hash and the tokens). */

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
