/** XXH32 as written here against hash-wasm's (the reference C in WebAssembly), and chunking. */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { xxhash32 } from "hash-wasm";
import { ChunkHasher, Xxh32, xxh32Hex } from "./xxh32.ts";

const bytes = new Uint8Array(200_003).map((_, i) => (i * 2654435761 + (i >> 7)) >>> 21);

Deno.test("xxh32: every length and alignment, whole and in pieces, as hash-wasm's", async () => {
  strictEqual(xxh32Hex(new Uint8Array(0)), "02cc5d05"); // the spec's hash of nothing
  const lengths = [0, 1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 64, 100, 1000, 65_536, 65_553, 199_990];
  for (const n of lengths) {
    for (const offset of [0, 1, 2, 3, 8]) {
      const b = bytes.subarray(offset, offset + n);
      const want = await xxhash32(b);
      strictEqual(xxh32Hex(b), want, `${n} bytes at ${offset}`);
      for (const piece of [1, 7, 16, 4099]) {
        const h = new Xxh32();
        for (let at = 0; at < n; at += piece) h.update(b.subarray(at, at + piece));
        strictEqual(h.digest().toString(16).padStart(8, "0"), want, `${n} in ${piece}s`);
      }
    }
  }
});

Deno.test("ChunkHasher: one XXH32 per chunk, the last partial, however the bytes arrive", async () => {
  const chunk = 50_000;
  const want: string[] = [];
  for (let at = 0; at < bytes.length; at += chunk) {
    want.push(await xxhash32(bytes.subarray(at, at + chunk)));
  }
  for (const piece of [1 << 20, 65_536, 49_999, 777]) {
    const h = new ChunkHasher(chunk);
    for (let at = 0; at < bytes.length; at += piece) h.update(bytes.subarray(at, at + piece));
    deepStrictEqual(h.finish(), want.join(""), `pieces of ${piece}`);
  }
  strictEqual(new ChunkHasher(chunk).finish(), "");
});
