/**
 * TQ1_0 (ggml type 34): 256 ternary weights in 54 bytes, d·t with t in {−1, 0, 1}, packed five
 * trits to a byte in base 3. Layout (bytes, little-endian):
 *
 * - 48 bytes `qs` at 0: byte m < 32 holds elements 32n + m for trit n = 0..4; byte 32 + m
 *   (m < 16) holds elements 160 + 16n + m;
 * - 4 bytes `qh` at 48: byte j holds elements 240 + 4n + j for trit n = 0..3 (its fifth trit
 *   is 0);
 * - f16 `d` at 52.
 *
 * A byte stores its trits (t + 1, first trit most significant) as v = Σ (tₙ + 1)·3^(4−n) in
 * 0..242, scaled to a byte as ⌈256·v / 243⌉. Trit n then comes back with integer arithmetic
 * only, as ggml does it: q = byte·3ⁿ mod 256 moves trit n to the top, and (3q) >> 8 reads it.
 * GPU decoder: `shaders/formats/tq1_0.wgsl`.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { randomF16, readF16, roundHalfAway, writeF16 } from "./block.ts";

const POW3 = [1, 3, 9, 27, 81];

/** The nearest of −1, 0, 1 to v / d (0 when d is 0). */
export const ternary = (v: number, d: number): number =>
  d > 0 ? Math.max(-1, Math.min(1, roundHalfAway(v / d))) : 0;

/** Trit n (0..2, first trit most significant) of a TQ1_0 byte. */
export const tq1Trit = (byte: number, n: number): number => ((((byte * POW3[n]!) & 255) * 3) >> 8);

/** The byte holding trits t[0..4] (each 0..2, t[0] most significant). */
function packTrits(t: readonly number[]): number {
  const v = t.reduce((acc, d) => 3 * acc + d, 0);
  return Math.ceil((256 * v) / 243);
}

/** Where element e lives: [byte offset in the block, trit]. */
function place(e: number): [number, number] {
  if (e < 160) return [e & 31, e >> 5];
  if (e < 240) return [32 + ((e - 160) & 15), (e - 160) >> 4];
  return [48 + ((e - 240) & 3), (e - 240) >> 2];
}

/** TQ1_0's geometry: all a GGUF header needs (`../blocks.ts`). */
export const TQ1_0_BLOCK: QuantBlockOf<"TQ1_0"> = quantBlock("TQ1_0", 34, 256, 54);

export const TQ1_0: WeightFormat = {
  ...TQ1_0_BLOCK,
  decode(bytes, offset, out, outOffset) {
    const d = readF16(bytes, offset + 52);
    for (let e = 0; e < 256; e++) {
      const [at, n] = place(e);
      out[outOffset + e] = (tq1Trit(bytes[offset + at]!, n) - 1) * d;
    }
  },
  encode(values, offset, out, outOffset) {
    let amax = 0;
    for (let e = 0; e < 256; e++) amax = Math.max(amax, Math.abs(values[offset + e]!));
    const d = writeF16(out, outOffset + 52, amax);
    const trits = Array.from({ length: 52 }, () => [0, 0, 0, 0, 0]);
    for (let e = 0; e < 256; e++) {
      const [at, n] = place(e);
      const t = ternary(values[offset + e]!, d);
      trits[at]![n] = t + 1;
    }
    for (let at = 0; at < 52; at++) out[outOffset + at] = packTrits(trits[at]!);
  },
  randomBlock(out, offset, next) {
    for (let at = 0; at < 52; at++) {
      const v = at < 48 ? next() % 243 : 3 * (next() % 81);
      out[offset + at] = Math.ceil((256 * v) / 243);
    }
    randomF16(out, offset + 52, 1, next);
  },
};
