/**
 * Block hashes as Dynamo's KV router computes them, so that the hashes Kiln's KV events carry
 * are the ones a router derives from a request's own tokens: a block's local hash is XXH3-64
 * (seed 1337) of its token ids as little-endian u32s; a sequence's first block hash is its local
 * hash, and each later one is XXH3-64 (seed 1337) of the parent's hash and the block's local
 * hash as two little-endian u64s. XXH3 is hash-wasm's (a WebAssembly build of the reference C),
 * made once, asynchronously, and then called synchronously per block.
 *
 * @module
 */
import { createXXHash3, type IHasher } from "hash-wasm";
import { chainBlocks } from "./block_hash.ts";

/** Dynamo's seed for block and chain hashes (`XXH3_SEED`). */
export const ROUTER_SEED = 1337;

/** The chained hash of a block of `tokens` after the block whose hash is `parent`. */
export type RouterHash = (parent: bigint | null, tokens: readonly number[]) => bigint;

/** XXH3-64 of `bytes` with the router's seed, as a u64. */
function digest(h: IHasher, bytes: Uint8Array): bigint {
  h.init();
  h.update(bytes);
  const out = h.digest("binary");
  // hash-wasm writes the 64-bit hash big-endian (its hex digest's byte order).
  return new DataView(out.buffer, out.byteOffset, 8).getBigUint64(0, false);
}

/** A {@linkcode RouterHash}, once its hasher is made. */
export async function routerHash(): Promise<RouterHash> {
  const h = await createXXHash3(ROUTER_SEED, 0);
  return (parent, tokens) => {
    const block = new Uint8Array(4 * tokens.length);
    const view = new DataView(block.buffer);
    tokens.forEach((t, i) => view.setUint32(4 * i, t >>> 0, true));
    const local = digest(h, block);
    if (parent === null) return local;
    const pair = new Uint8Array(16);
    const pv = new DataView(pair.buffer);
    pv.setBigUint64(0, parent, true);
    pv.setBigUint64(8, local, true);
    return digest(h, pair);
  };
}

/** The chained router hashes of the full blocks of `tokens`. */
export function routerHashes(
  hash: RouterHash,
  tokens: readonly number[],
  blockSize: number,
): bigint[] {
  return chainBlocks(tokens, blockSize, hash);
}
