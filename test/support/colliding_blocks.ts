/**
 * Two 16-token blocks of fortune's byte-level vocabulary (BOS 256, then bytes) whose keys
 * collided under Kiln's former prefix-cache key, 64-bit FNV-1a ({@linkcode formerKey}): both gave
 * 0x01cbffcb3be59bb7 (issue 19; found by a birthday search in 18 s on 2 cores).
 */
export const COLLIDING_A: readonly number[] = [
  256,
  89,
  111,
  117,
  32,
  119,
  105,
  108,
  148,
  230,
  65,
  101,
  188,
  245,
  85,
  6,
];
/** The other block of the pair: see {@linkcode COLLIDING_A}. */
export const COLLIDING_B: readonly number[] = [
  256,
  89,
  111,
  117,
  32,
  119,
  105,
  108,
  109,
  137,
  161,
  120,
  104,
  167,
  170,
  20,
];

/**
 * The former (removed) prefix-cache key: 64-bit FNV-1a over the parent's key and each token, each
 * as 8 little-endian bytes. Kept here only to show the collision and to give tests a weak key.
 */
export function formerKey(parent: bigint | null, tokens: readonly number[]): bigint {
  let h = 0xcbf29ce484222325n;
  for (const v of [parent ?? 0n, ...tokens.map((t) => BigInt(t >>> 0))]) {
    for (let i = 0n; i < 64n; i += 8n) {
      h = ((h ^ ((v >> i) & 0xffn)) * 0x100000001b3n) & 0xffffffffffffffffn;
    }
  }
  return h;
}

/** {@linkcode formerKey} in the shape of a `BlockKey` (64 hex digits), for a BlockManager. */
export function formerBlockKey(parent: string | null, tokens: readonly number[]): string {
  const h = formerKey(parent === null ? null : BigInt(`0x${parent}`) & 0xffffffffffffffffn, tokens);
  return h.toString(16).padStart(64, "0");
}
