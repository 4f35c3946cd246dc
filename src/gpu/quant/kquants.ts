/**
 * The 256-element ggml "K-quant" super-block formats Q4_K, Q5_K and Q6_K: decode one block to
 * float64, and encode one block with a small search for the sub-block scales. Layouts (bytes,
 * little-endian), as ggml lays them out:
 *
 * - Q4_K, 144 bytes: f16 `d` at 0, f16 `dmin` at 2, 12 bytes of packed 6-bit (scale, min) pairs at
 *   4, 128 bytes of nibbles at 16. Eight sub-blocks of 32; sub-block j has
 *   element = d·sc[j]·q − dmin·mn[j], q its nibble. Sub-blocks 2p and 2p+1 share the 32 bytes at
 *   16 + 32p: element l of sub-block 2p is the low nibble of byte l, of sub-block 2p+1 the high.
 *   (sc, mn) for j < 4: low 6 bits of byte j and of byte j+4; for j ≥ 4: the low nibble of byte
 *   j+4 plus the top 2 bits of byte j−4 (as bits 4..5) for sc, the high nibble of byte j+4 plus
 *   the top 2 bits of byte j for mn.
 * - Q5_K, 176 bytes: `d`, `dmin`, 12 scale bytes as Q4_K, 32 bytes `qh` at 16, 128 nibble bytes
 *   at 48 in Q4_K's order; element l of sub-block j adds 16 when bit j of qh[l] is set.
 * - Q6_K, 210 bytes: 128 bytes `ql` at 0, 64 bytes `qh` at 128, 16 × int8 scales at 192, f16 `d`
 *   at 208. Sixteen sub-blocks of 16; element e = d·sc[e/16]·(q − 32), q 6 bits. In half h (128
 *   elements) for l < 32, element 128h + 32c + l takes ql byte 64h + l (c = 0, 2) or 64h + 32 + l
 *   (c = 1, 3), its low nibble for c < 2 and high nibble otherwise, and bits 2c..2c+1 of qh byte
 *   32h + l as bits 4..5.
 */
import { type BlockCodec, clamp, readF16, roundHalfAway, writeF16 } from "./legacy.ts";

/** The 6-bit (scale, min) pair of sub-block j from the 12 scale bytes at `at`. */
export function scaleMin(src: Uint8Array, at: number, j: number): [number, number] {
  if (j < 4) return [src[at + j]! & 63, src[at + j + 4]! & 63];
  const lowHigh = src[at + j + 4]!;
  return [
    (lowHigh & 15) | ((src[at + j - 4]! >> 6) << 4),
    (lowHigh >> 4) | ((src[at + j]! >> 6) << 4),
  ];
}

/** Pack eight 6-bit (scale, min) pairs into the 12 bytes at `at`. */
export function packScaleMins(
  dst: Uint8Array,
  at: number,
  sc: ArrayLike<number>,
  mn: ArrayLike<number>,
): void {
  dst.fill(0, at, at + 12);
  for (let j = 0; j < 4; j++) {
    dst[at + j] = sc[j]!;
    dst[at + j + 4] = mn[j]!;
  }
  for (let j = 4; j < 8; j++) {
    dst[at + j + 4] = (sc[j]! & 15) | ((mn[j]! & 15) << 4);
    dst[at + j - 4]! |= (sc[j]! >> 4) << 6;
    dst[at + j]! |= (mn[j]! >> 4) << 6;
  }
}

/** Levels for x ≈ step·q − offset, q in 0..nmax (all zero when step is 0). */
function levelOf(x: number, step: number, offset: number, nmax: number): number {
  return step > 0 ? clamp(roundHalfAway((x + offset) / step), 0, nmax) : 0;
}

/** Squared error of representing x[from..from+n) as step·q − offset. */
function asymError(
  x: ArrayLike<number>,
  from: number,
  n: number,
  nmax: number,
  step: number,
  offset: number,
) {
  let err = 0;
  for (let i = from; i < from + n; i++) {
    err += (x[i]! - (step * levelOf(x[i]!, step, offset, nmax) - offset)) ** 2;
  }
  return err;
}

/**
 * A (step ≥ 0, offset ≥ 0) pair for x ≈ step·q − offset, q in 0..nmax: for each of 21 step
 * sizes around range/nmax, assign levels, then refit step and offset by least squares (offset
 * kept ≥ 0 so the lowest level stays ≤ 0), keeping the pair with the least squared error.
 */
function fitAsym(x: ArrayLike<number>, from: number, n: number, nmax: number): [number, number] {
  let lo = 0, hi = -Infinity;
  for (let i = from; i < from + n; i++) {
    lo = Math.min(lo, x[i]!);
    hi = Math.max(hi, x[i]!);
  }
  if (hi <= lo) return [0, -lo];
  let best: [number, number] = [(hi - lo) / nmax, -lo];
  let bestErr = asymError(x, from, n, nmax, best[0], best[1]);
  for (let c = -10; c <= 10; c++) {
    const inv = (nmax + c / 10) / (hi - lo);
    let sq = 0, sq2 = 0, sx = 0, sxq = 0;
    for (let i = from; i < from + n; i++) {
      const q = clamp(roundHalfAway((x[i]! - lo) * inv), 0, nmax);
      sq += q;
      sq2 += q * q;
      sx += x[i]!;
      sxq += x[i]! * q;
    }
    const det = n * sq2 - sq * sq;
    if (det <= 0) continue;
    let step = (n * sxq - sq * sx) / det;
    let base = (sq2 * sx - sq * sxq) / det;
    if (base > 0) [base, step] = [0, sxq / sq2];
    if (!(step > 0)) continue;
    const err = asymError(x, from, n, nmax, step, -base);
    if (err < bestErr) [best, bestErr] = [[step, -base], err];
  }
  return best;
}

/**
 * Encode one Q4_K (nmax 15) or Q5_K (nmax 31) block's scales: fit each sub-block, quantize the
 * eight scales and mins to 6 bits against f16 `d` and `dmin` (at `at`, `at`+2), then try each
 * 6-bit pair ±1 against the sub-block's error. Returns the 256 levels.
 */
function encodeAsymBlock(
  x: ArrayLike<number>,
  from: number,
  dst: Uint8Array,
  at: number,
  nmax: number,
) {
  const fits = Array.from({ length: 8 }, (_, j) => fitAsym(x, from + 32 * j, 32, nmax));
  const d = writeF16(dst, at, Math.max(...fits.map((f) => f[0])) / 63);
  const dmin = writeF16(dst, at + 2, Math.max(...fits.map((f) => f[1])) / 63);
  const sc = new Uint8Array(8), mn = new Uint8Array(8);
  const levels = new Uint8Array(256);
  for (let j = 0; j < 8; j++) {
    const [step, offset] = fits[j]!;
    const ls0 = d > 0 ? clamp(roundHalfAway(step / d), 0, 63) : 0;
    const lm0 = dmin > 0 ? clamp(roundHalfAway(offset / dmin), 0, 63) : 0;
    let bestErr = Infinity;
    for (const ls of [ls0, ls0 - 1, ls0 + 1]) {
      for (const lm of [lm0, lm0 - 1, lm0 + 1]) {
        if (ls < 0 || ls > 63 || lm < 0 || lm > 63) continue;
        const err = asymError(x, from + 32 * j, 32, nmax, d * ls, dmin * lm);
        if (err < bestErr) [bestErr, sc[j], mn[j]] = [err, ls, lm];
      }
    }
    for (let l = 0; l < 32; l++) {
      levels[32 * j + l] = levelOf(x[from + 32 * j + l]!, d * sc[j]!, dmin * mn[j]!, nmax);
    }
  }
  packScaleMins(dst, at + 4, sc, mn);
  return levels;
}

/** Decode a Q4_K or Q5_K block (`qh` at `at`+16 when `high`). */
function decodeAsymBlock(
  src: Uint8Array,
  at: number,
  out: Float64Array,
  outAt: number,
  high: boolean,
) {
  const d = readF16(src, at), dmin = readF16(src, at + 2);
  const qs = at + (high ? 48 : 16);
  for (let j = 0; j < 8; j++) {
    const [sc, mn] = scaleMin(src, at + 4, j);
    for (let l = 0; l < 32; l++) {
      const byte = src[qs + 32 * (j >> 1) + l]!;
      const q = (j & 1 ? byte >> 4 : byte & 15) + (high ? ((src[at + 16 + l]! >> j) & 1) << 4 : 0);
      out[outAt + 32 * j + l] = d * sc * q - dmin * mn;
    }
  }
}

export const Q4_K: BlockCodec = {
  decode: (src, at, out, outAt) => decodeAsymBlock(src, at, out, outAt, false),
  encode(values, from, dst, at) {
    const q = encodeAsymBlock(values, from, dst, at, 15);
    for (let p = 0; p < 4; p++) {
      for (let l = 0; l < 32; l++) {
        dst[at + 16 + 32 * p + l] = q[64 * p + l]! | (q[64 * p + 32 + l]! << 4);
      }
    }
  },
};

export const Q5_K: BlockCodec = {
  decode: (src, at, out, outAt) => decodeAsymBlock(src, at, out, outAt, true),
  encode(values, from, dst, at) {
    const q = encodeAsymBlock(values, from, dst, at, 31);
    dst.fill(0, at + 16, at + 48);
    for (let p = 0; p < 4; p++) {
      for (let l = 0; l < 32; l++) {
        const [a, b] = [q[64 * p + l]!, q[64 * p + 32 + l]!];
        dst[at + 48 + 32 * p + l] = (a & 15) | ((b & 15) << 4);
        dst[at + 16 + l]! |= ((a >> 4) << (2 * p)) | ((b >> 4) << (2 * p + 1));
      }
    }
  },
};

/** Squared error of x[from..from+16) as step·q, q in −32..31. */
function symError(x: ArrayLike<number>, from: number, step: number): number {
  let err = 0;
  for (let i = from; i < from + 16; i++) {
    const q = step === 0 ? 0 : clamp(roundHalfAway(x[i]! / step), -32, 31);
    err += (x[i]! - step * q) ** 2;
  }
  return err;
}

/** A signed step for x ≈ step·q, q in −32..31: the extreme value mapped near −32 or near 31. */
function fitSym(x: ArrayLike<number>, from: number): number {
  let max = 0;
  for (let i = from; i < from + 16; i++) if (Math.abs(x[i]!) > Math.abs(max)) max = x[i]!;
  if (max === 0) return 0;
  let best = max / -32, bestErr = symError(x, from, best);
  for (let c = -5; c <= 5; c++) {
    for (const step of [max / -(32 + c / 10), max / (31 + c / 10)]) {
      const err = symError(x, from, step);
      if (err < bestErr) [best, bestErr] = [step, err];
    }
  }
  return best;
}

export const Q6_K: BlockCodec = {
  decode(src, at, out, outAt) {
    const d = readF16(src, at + 208);
    for (let h = 0; h < 2; h++) {
      for (let c = 0; c < 4; c++) {
        for (let l = 0; l < 32; l++) {
          const byte = src[at + 64 * h + 32 * (c & 1) + l]!;
          const q = (c < 2 ? byte & 15 : byte >> 4) |
            (((src[at + 128 + 32 * h + l]! >> (2 * c)) & 3) << 4);
          const e = 128 * h + 32 * c + l;
          out[outAt + e] = d * ((src[at + 192 + (e >> 4)]! << 24) >> 24) * (q - 32);
        }
      }
    }
  },
  encode(values, from, dst, at) {
    const steps = Array.from({ length: 16 }, (_, j) => fitSym(values, from + 16 * j));
    let extreme = 0;
    for (const s of steps) if (Math.abs(s) > Math.abs(extreme)) extreme = s;
    // The sub-block with the largest step gets scale −128, the most negative int8.
    const d = writeF16(dst, at + 208, extreme / -128);
    const levels = new Uint8Array(256);
    for (let j = 0; j < 16; j++) {
      const s0 = d === 0 ? 0 : clamp(roundHalfAway(steps[j]! / d), -128, 127);
      let sc = s0, bestErr = Infinity;
      for (const s of [s0, s0 - 1, s0 + 1]) {
        if (s < -128 || s > 127) continue;
        const err = symError(values, from + 16 * j, d * s);
        if (err < bestErr) [bestErr, sc] = [err, s];
      }
      dst[at + 192 + j] = sc & 0xff;
      const step = d * sc;
      for (let l = 0; l < 16; l++) {
        const v = values[from + 16 * j + l]!;
        levels[16 * j + l] = (step === 0 ? 0 : clamp(roundHalfAway(v / step), -32, 31)) + 32;
      }
    }
    for (let h = 0; h < 2; h++) {
      for (let l = 0; l < 32; l++) {
        const [a, b, c, e] = [0, 32, 64, 96].map((o) => levels[128 * h + o + l]!) as [
          number,
          number,
          number,
          number,
        ];
        dst[at + 64 * h + l] = (a & 15) | ((c & 15) << 4);
        dst[at + 64 * h + 32 + l] = (b & 15) | ((e & 15) << 4);
        dst[at + 128 + 32 * h + l] = (a >> 4) | ((b >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6);
      }
    }
  },
};
