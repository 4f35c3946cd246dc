/**
 * Kiln's KV-router block hashes (`router_hash.ts`) against hashes computed outside Kiln: Debian's
 * python3-xxhash (the xxHash C library) over the scheme Dynamo's router uses
 * (`scripts/router_hash_expectations.py` wrote `test/fixtures/router_hash/expectations.json`).
 * The Python KV subscriber test checks the same hashes over ZMQ; this one needs no Python and
 * names the block that differs. Planted errors the comparison must reject: the chained pair in
 * the wrong order, tokens as big-endian u32s, seed 0, and the digest read in the wrong byte order.
 */
import { deepStrictEqual, notDeepStrictEqual, throws } from "node:assert/strict";
import { createXXHash3 } from "hash-wasm";
import { type RouterHash, routerHash, routerHashes } from "./router_hash.ts";

interface Case {
  block_size: number;
  tokens: number[];
  hashes: string[];
}

const { cases } = JSON.parse(
  await Deno.readTextFile(
    new URL("../../test/fixtures/router_hash/expectations.json", import.meta.url),
  ),
) as { cases: Case[] };

/** Fails naming the first case whose hashes differ from the committed ones. */
function check(hash: RouterHash): void {
  for (const [i, c] of cases.entries()) {
    const got = routerHashes(hash, c.tokens, c.block_size).map(String);
    deepStrictEqual(got, c.hashes, `case ${i} (block size ${c.block_size})`);
  }
}

/** A hash built like `routerHash` with one planted mistake. */
async function mutant(
  how: "pair-swapped" | "tokens-big-endian" | "seed-0" | "digest-little-endian",
): Promise<RouterHash> {
  const h = await createXXHash3(how === "seed-0" ? 0 : 1337, 0);
  const digest = (bytes: Uint8Array) => {
    h.init();
    h.update(bytes);
    const out = h.digest("binary");
    return new DataView(out.buffer, out.byteOffset, 8).getBigUint64(
      0,
      how === "digest-little-endian",
    );
  };
  return (parent, tokens) => {
    const block = new Uint8Array(4 * tokens.length);
    const view = new DataView(block.buffer);
    tokens.forEach((t, i) => view.setUint32(4 * i, t >>> 0, how !== "tokens-big-endian"));
    const local = digest(block);
    if (parent === null) return local;
    const pair = new DataView(new ArrayBuffer(16));
    const [a, b] = how === "pair-swapped" ? [local, parent] : [parent, local];
    pair.setBigUint64(0, a, true);
    pair.setBigUint64(8, b, true);
    return digest(new Uint8Array(pair.buffer));
  };
}

Deno.test("router block hashes equal python3-xxhash's over Dynamo's scheme", async () => {
  check(await routerHash());
});

Deno.test("the fixture holds chained blocks: every case but one has a parent", () => {
  const chainedCases = cases.filter((c) => c.hashes.length > 1);
  deepStrictEqual(chainedCases.length >= 4, true);
  // Equal tokens in consecutive blocks must still hash apart: the parent is in the hash.
  const repeated = cases.find((c) => c.block_size === 1 && new Set(c.tokens).size === 1)!;
  notDeepStrictEqual(repeated.hashes[0], repeated.hashes[1]);
});

for (
  const how of ["pair-swapped", "tokens-big-endian", "seed-0", "digest-little-endian"] as const
) {
  Deno.test(`router hash check rejects a planted error: ${how}`, async () => {
    const hash = await mutant(how);
    throws(() => check(hash));
  });
}
