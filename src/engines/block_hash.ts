/**
 * Prefix-chained keys of KV blocks. A block's key is the SHA-256 of its parent's key (32 zero
 * bytes for a sequence's first block) followed by its token ids as little-endian u32s, so equal
 * keys mean equal prefixes unless SHA-256 collides. KV events publish a 64-bit id per key
 * ({@linkcode publishedHash}); the cache itself keys by the whole digest.
 */
import { sha256 } from "@noble/hashes/sha2.js";

/** A block's prefix-cache key: the SHA-256 digest as 64 lowercase hex digits. */
export type BlockKey = string;

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
/** The value of a lowercase hex digit's char code. */
const nibble = (c: number) => (c <= 57 ? c - 48 : c - 87);

/** The key of a block of `tokens` whose parent block has key `parent` (`null`: none). */
export function blockKey(parent: BlockKey | null, tokens: readonly number[]): BlockKey {
  const message = new Uint8Array(32 + 4 * tokens.length);
  if (parent !== null) {
    for (let i = 0; i < 32; i++) {
      message[i] = (nibble(parent.charCodeAt(2 * i)) << 4) | nibble(parent.charCodeAt(2 * i + 1));
    }
  }
  const view = new DataView(message.buffer);
  tokens.forEach((t, i) => view.setUint32(32 + 4 * i, t >>> 0, true));
  let key = "";
  for (const b of sha256(message)) key += HEX[b]!;
  return key;
}

/**
 * `link` over the full blocks of `tokens` in order, each given the previous block's result
 * (`null` for the first): the chain of prefix keys, whatever the hash.
 */
export function chainBlocks<K>(
  tokens: readonly number[],
  blockSize: number,
  link: (parent: K | null, block: readonly number[]) => K,
): K[] {
  const out: K[] = [];
  let parent: K | null = null;
  for (let i = 0; i + blockSize <= tokens.length; i += blockSize) {
    parent = link(parent, tokens.slice(i, i + blockSize));
    out.push(parent);
  }
  return out;
}

/** Keys of the full blocks of `tokens`, each chained to its parent. */
export function blockKeys(tokens: readonly number[], blockSize: number): BlockKey[] {
  return chainBlocks(tokens, blockSize, blockKey);
}

/**
 * The u64 a KV event carries for a key: the digest's last 8 bytes read big-endian, which is how
 * vLLM turns its SHA-256 block hashes into integer event hashes for Dynamo's router.
 */
export function publishedHash(key: BlockKey): bigint {
  return BigInt(`0x${key.slice(48)}`);
}

/** Published hashes ({@linkcode publishedHash}) of the full blocks of `tokens`. */
export function blockHashes(tokens: readonly number[], blockSize: number): bigint[] {
  return blockKeys(tokens, blockSize).map(publishedHash);
}
