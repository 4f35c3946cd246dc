/**
 * The 32-element ggml block formats Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL: decode one block to
 * float64 and encode one block by round-to-nearest. Layouts (bytes, little-endian), as ggml lays them out:
 *
 * - Q8_0, 34 bytes: f16 `d` at 0, 32 × int8 `q` at 2; element i = d · q[i].
 * - Q4_0, 18 bytes: f16 `d` at 0, 16 bytes at 2; element i < 16 is the low nibble of byte i,
 *   element i + 16 its high nibble; element = d · (nibble − 8).
 * - Q4_1, 20 bytes: f16 `d` at 0, f16 `m` at 2, 16 bytes at 4 in Q4_0's nibble order;
 *   element = d · nibble + m.
 * - Q5_0, 22 bytes: f16 `d` at 0, u32 `qh` at 2, 16 bytes at 6 in Q4_0's nibble order; bit j of
 *   `qh` is element j's fifth bit (bits 16..31: elements 16..31); element = d · (q − 16).
 * - Q5_1, 24 bytes: f16 `d` at 0, f16 `m` at 2, u32 `qh` at 4, 16 bytes at 8 as in Q5_0;
 *   element = d · q + m.
 * - IQ4_NL, 18 bytes: f16 `d` at 0, 16 bytes at 2 in Q4_0's nibble order; element = d · level
 *   q, from 16 non-uniform signed levels (`iq4_nl_values.ts`, read back from ggml).
 * (llama.cpp writes Q5_0 and Q5_1 where a K-quant's 256-element super-block does not fit a row.)
 */
import { f16ToNumber, numberToF16 } from "../dtype.ts";
import { IQ4_NL_VALUES } from "./iq4_nl_values.ts";

/** A block codec: `decode` writes the block's elements, `encode` writes the block's bytes. */
export interface BlockCodec {
  decode(src: Uint8Array, at: number, out: Float64Array, outAt: number): void;
  encode(values: ArrayLike<number>, from: number, dst: Uint8Array, at: number): void;
}

/** The f16 at byte `at` as a number. */
export const readF16 = (b: Uint8Array, at: number): number =>
  f16ToNumber(b[at]! | (b[at + 1]! << 8));

/** Store `value` as f16 at byte `at`; returns the value the f16 holds. */
export function writeF16(b: Uint8Array, at: number, value: number): number {
  const h = numberToF16(value);
  b[at] = h & 0xff;
  b[at + 1] = h >> 8;
  return f16ToNumber(h);
}

/** Round half away from zero (C's `roundf`). */
export const roundHalfAway = (v: number): number => Math.sign(v) * Math.floor(Math.abs(v) + 0.5);

export const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));

export const Q8_0: BlockCodec = {
  decode(src, at, out, outAt) {
    const d = readF16(src, at);
    for (let i = 0; i < 32; i++) out[outAt + i] = d * ((src[at + 2 + i]! << 24) >> 24);
  },
  encode(values, from, dst, at) {
    let amax = 0;
    for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(values[from + i]!));
    const d = writeF16(dst, at, amax / 127);
    const inv = d === 0 ? 0 : 1 / d;
    for (let i = 0; i < 32; i++) {
      dst[at + 2 + i] = clamp(roundHalfAway(values[from + i]! * inv), -127, 127) & 0xff;
    }
  },
};

/** The value of largest magnitude among the block's 32 (the first of equal ones), sign kept. */
function signedAbsMax(values: ArrayLike<number>, from: number): number {
  let max = 0;
  for (let i = 0; i < 32; i++) {
    const v = values[from + i]!;
    if (Math.abs(v) > Math.abs(max)) max = v;
  }
  return max;
}

/** The smallest and largest of the block's 32 values (Q4_1's and Q5_1's minimum and range). */
function blockRange(values: ArrayLike<number>, from: number): [number, number] {
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < 32; i++) {
    lo = Math.min(lo, values[from + i]!);
    hi = Math.max(hi, values[from + i]!);
  }
  return [lo, hi];
}

/** Decode the 16 nibble bytes at `at` as ggml's 4-bit order: low nibbles first, then high. */
function nibbles(
  src: Uint8Array,
  at: number,
  scale: number,
  offset: number,
  out: Float64Array,
  o: number,
) {
  for (let i = 0; i < 16; i++) {
    const byte = src[at + i]!;
    out[o + i] = scale * (byte & 15) + offset;
    out[o + 16 + i] = scale * (byte >> 4) + offset;
  }
}

/** Pack 32 levels (0..15) in ggml's 4-bit order at `at`. */
function packNibbles(levels: ArrayLike<number>, dst: Uint8Array, at: number): void {
  for (let i = 0; i < 16; i++) dst[at + i] = levels[i]! | (levels[16 + i]! << 4);
}

export const Q4_0: BlockCodec = {
  decode(src, at, out, outAt) {
    // d · (q − 8), as ggml computes it: level 8 of a negative d is −0, not d·8 − 8·d = +0.
    const d = readF16(src, at);
    for (let i = 0; i < 16; i++) {
      const byte = src[at + 2 + i]!;
      out[outAt + i] = d * ((byte & 15) - 8);
      out[outAt + 16 + i] = d * ((byte >> 4) - 8);
    }
  },
  encode(values, from, dst, at) {
    // The value of largest magnitude maps to level 0 (−8·d), which uses the asymmetric range.
    const max = signedAbsMax(values, from);
    const d = writeF16(dst, at, max / -8);
    const inv = d === 0 ? 0 : 1 / d;
    const levels = new Uint8Array(32);
    for (let i = 0; i < 32; i++) {
      levels[i] = clamp(roundHalfAway(values[from + i]! * inv) + 8, 0, 15);
    }
    packNibbles(levels, dst, at + 2);
  },
};

export const Q4_1: BlockCodec = {
  decode(src, at, out, outAt) {
    nibbles(src, at + 4, readF16(src, at), readF16(src, at + 2), out, outAt);
  },
  encode(values, from, dst, at) {
    const [lo, hi] = blockRange(values, from);
    const d = writeF16(dst, at, (hi - lo) / 15);
    const m = writeF16(dst, at + 2, lo);
    const inv = d === 0 ? 0 : 1 / d;
    const levels = new Uint8Array(32);
    for (let i = 0; i < 32; i++) {
      levels[i] = clamp(roundHalfAway((values[from + i]! - m) * inv), 0, 15);
    }
    packNibbles(levels, dst, at + 4);
  },
};

/** The 32 five-bit levels of a Q5 block: nibbles at `at`, fifth bits in the u32 at `qhAt`. */
function fiveBit(src: Uint8Array, at: number, qhAt: number): number[] {
  const qh =
    (src[qhAt]! | (src[qhAt + 1]! << 8) | (src[qhAt + 2]! << 16) | (src[qhAt + 3]! << 24)) >>> 0;
  const out = new Array<number>(32);
  for (let i = 0; i < 16; i++) {
    const byte = src[at + i]!;
    out[i] = (byte & 15) | (((qh >>> i) & 1) << 4);
    out[16 + i] = (byte >> 4) | (((qh >>> (16 + i)) & 1) << 4);
  }
  return out;
}

/** Store 32 five-bit levels: nibbles at `at`, fifth bits as a u32 at `qhAt`. */
function packFiveBit(levels: ArrayLike<number>, dst: Uint8Array, at: number, qhAt: number): void {
  let qh = 0;
  for (let i = 0; i < 32; i++) qh |= ((levels[i]! >> 4) & 1) << i;
  for (let b = 0; b < 4; b++) dst[qhAt + b] = (qh >>> (8 * b)) & 0xff;
  const low = Array.from({ length: 32 }, (_, i) => levels[i]! & 15);
  packNibbles(low, dst, at);
}

export const Q5_0: BlockCodec = {
  decode(src, at, out, outAt) {
    const d = readF16(src, at);
    fiveBit(src, at + 6, at + 2).forEach((q, i) => out[outAt + i] = d * (q - 16));
  },
  encode(values, from, dst, at) {
    // As Q4_0: the value of largest magnitude maps to level 0 (−16·d).
    const max = signedAbsMax(values, from);
    const d = writeF16(dst, at, max / -16);
    const inv = d === 0 ? 0 : 1 / d;
    const levels = Array.from(
      { length: 32 },
      (_, i) => clamp(roundHalfAway(values[from + i]! * inv) + 16, 0, 31),
    );
    packFiveBit(levels, dst, at + 6, at + 2);
  },
};

export const Q5_1: BlockCodec = {
  decode(src, at, out, outAt) {
    const d = readF16(src, at), m = readF16(src, at + 2);
    fiveBit(src, at + 8, at + 4).forEach((q, i) => out[outAt + i] = d * q + m);
  },
  encode(values, from, dst, at) {
    const [lo, hi] = blockRange(values, from);
    const d = writeF16(dst, at, (hi - lo) / 31);
    const m = writeF16(dst, at + 2, lo);
    const inv = d === 0 ? 0 : 1 / d;
    const levels = Array.from(
      { length: 32 },
      (_, i) => clamp(roundHalfAway((values[from + i]! - m) * inv), 0, 31),
    );
    packFiveBit(levels, dst, at + 8, at + 4);
  },
};

export const IQ4_NL: BlockCodec = {
  decode(src, at, out, outAt) {
    const d = readF16(src, at);
    for (let i = 0; i < 16; i++) {
      const byte = src[at + 2 + i]!;
      out[outAt + i] = d * IQ4_NL_VALUES[byte & 15]!;
      out[outAt + 16 + i] = d * IQ4_NL_VALUES[byte >> 4]!;
    }
  },
  encode(values, from, dst, at) {
    // The value of largest magnitude maps to the level of largest magnitude (the first, negative
    // one); every value then takes the nearest level.
    const max = signedAbsMax(values, from);
    const d = writeF16(dst, at, max / IQ4_NL_VALUES[0]!);
    const levels = new Uint8Array(32);
    for (let i = 0; i < 32; i++) {
      const v = values[from + i]!;
      let best = 0;
      for (let q = 1; q < 16; q++) {
        if (Math.abs(d * IQ4_NL_VALUES[q]! - v) < Math.abs(d * IQ4_NL_VALUES[best]! - v)) best = q;
      }
      levels[i] = best;
    }
    packNibbles(levels, dst, at + 2);
  },
};
