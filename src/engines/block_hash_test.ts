import {
  deepStrictEqual,
  match,
  notStrictEqual as notEqual,
  strictEqual as equal,
} from "node:assert/strict";
import { blockHashes, blockKey, blockKeys, publishedHash } from "./block_hash.ts";
import { COLLIDING_A, COLLIDING_B, formerKey } from "../../test/support/colliding_blocks.ts";

const hex = (b: ArrayBuffer) =>
  Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");

Deno.test("the issue's pair collides under the old FNV-1a key and not under the SHA-256 key", () => {
  equal(formerKey(null, COLLIDING_A), 0x01cbffcb3be59bb7n);
  equal(formerKey(null, COLLIDING_B), 0x01cbffcb3be59bb7n);
  notEqual(blockKey(null, COLLIDING_A), blockKey(null, COLLIDING_B));
  notEqual(publishedHash(blockKey(null, COLLIDING_A)), publishedHash(blockKey(null, COLLIDING_B)));
});

Deno.test("a key is SHA-256 of the parent key (or 32 zero bytes) and the tokens as LE u32s", async () => {
  const message = (parent: string | null, tokens: readonly number[]) => {
    const m = new Uint8Array(32 + 4 * tokens.length);
    if (parent) m.set(parent.match(/../g)!.map((h) => parseInt(h, 16)));
    const v = new DataView(m.buffer);
    tokens.forEach((t, i) => v.setUint32(32 + 4 * i, t, true));
    return m;
  };
  const first = blockKey(null, COLLIDING_A);
  match(first, /^[0-9a-f]{64}$/);
  equal(first, hex(await crypto.subtle.digest("SHA-256", message(null, COLLIDING_A))));
  const second = blockKey(first, COLLIDING_B);
  equal(second, hex(await crypto.subtle.digest("SHA-256", message(first, COLLIDING_B))));
  notEqual(second, blockKey(null, COLLIDING_B), "the parent is part of the key");
  notEqual(blockKey(null, [1, 2]), blockKey(null, [2, 1]), "so is the tokens' order");
});

Deno.test("blockKeys chains full blocks; published hashes are the keys' last 8 bytes", () => {
  const tokens = [...COLLIDING_A, ...COLLIDING_B, 7, 7, 7];
  const keys = blockKeys(tokens, 16);
  deepStrictEqual(keys, [blockKey(null, COLLIDING_A), blockKey(keys[0]!, COLLIDING_B)]);
  deepStrictEqual(blockHashes(tokens, 16), keys.map(publishedHash));
  equal(publishedHash("00".repeat(24) + "0123456789abcdef"), 0x0123456789abcdefn);
  equal(publishedHash("ff".repeat(32)), 2n ** 64n - 1n);
});
