/**
 * Kiln's Q5_0, Q5_1, IQ4_NL, IQ4_XS and MXFP4 decoders against ggml's `dequantize_row_*` on
 * blocks ggml's quantizer never writes (the committed fixtures hold only its output): every byte
 * random but the f16 fields, kept finite (so every fifth bit, level, 6-bit sub-block scale and
 * each of MXFP4's 256 exponents occurs), then blocks from each format's `randomBlock` and its
 * encoder. Dev-only (not in `npm test`): needs the peers' packages (tools/peers).
 *
 *   node_modules/.bin/deno test -A tools/peers/q5_iq4_mxfp4_blocks_test.ts
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import type { WeightFormat } from "../../src/gpu/formats/format.ts";
import { dequantize, QUANT_FORMATS } from "../../src/gpu/formats/registry.ts";
import { loadQuantTables } from "../../src/gpu/formats/tables.ts";
import { openGgml } from "./ggml.ts";

const FORMATS = ["Q5_0", "Q5_1", "IQ4_NL", "IQ4_XS", "MXFP4"] as const;
/** Byte offsets of each format's f16 fields. */
const HALVES: Record<(typeof FORMATS)[number], number[]> = {
  Q5_0: [0],
  Q5_1: [0, 2],
  IQ4_NL: [0],
  IQ4_XS: [0],
  MXFP4: [],
};
const BLOCKS = 4096;

function xorshift(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
}

/** Indices where Kiln's decode, rounded to f32, is not ggml's value bit for bit. */
function differ(
  f: WeightFormat,
  bytes: Uint8Array,
  want: Float32Array,
): number[] {
  const got = dequantize(f.type, bytes, want.length);
  return [...want.keys()].filter((i) => !Object.is(Math.fround(got[i]!), want[i]));
}

Deno.test("Q5_0, Q5_1, IQ4_NL, IQ4_XS, MXFP4: Kiln decodes random, generated and encoded blocks as ggml does", async () => {
  await loadQuantTables();
  const ggml = await openGgml();
  try {
    for (const type of FORMATS) {
      const f = QUANT_FORMATS[type];
      const t = ggml.type(f.ggmlType);
      ok(
        t !== undefined && t.blockSize === f.blockSize &&
          t.blockBytes === f.blockBytes,
        type,
      );
      const next = xorshift(f.ggmlType * 0x9e3779b1);
      const random = new Uint8Array(BLOCKS * f.blockBytes).map(() => next() & 0xff);
      for (let b = 0; b < BLOCKS; b++) {
        // An f16 exponent of 31 (inf, NaN) becomes 30.
        for (const h of HALVES[type]) random[b * f.blockBytes + h + 1]! &= 0xfb;
      }
      const generated = new Uint8Array(BLOCKS * f.blockBytes);
      for (let b = 0; b < BLOCKS; b++) {
        f.randomBlock(generated, b * f.blockBytes, next);
      }
      const values = Float32Array.from(
        { length: BLOCKS * f.blockSize },
        () => next() / 2 ** 31 - 1,
      );
      const encoded = new Uint8Array(BLOCKS * f.blockBytes);
      for (let b = 0; b < BLOCKS; b++) {
        f.encode!(values, b * f.blockSize, encoded, b * f.blockBytes);
      }
      for (
        const [what, bytes] of [
          ["random", random],
          ["randomBlock", generated],
          ["encode", encoded],
        ] as const
      ) {
        const wrong = differ(
          f,
          bytes,
          ggml.dequantize(t, bytes, BLOCKS * f.blockSize),
        );
        equal(
          wrong.length,
          0,
          `${type} ${what}: ${wrong.length} elements differ, first ${wrong[0]}`,
        );
      }
      if (type === "MXFP4") {
        const exponents = new Set(
          [...Array(BLOCKS).keys()].map((b) => random[b * 17]),
        );
        equal(exponents.size, 256, "every E8M0 exponent was decoded");
      }
    }
  } finally {
    ggml.close();
  }
});
