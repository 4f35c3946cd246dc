/**
 * What Q4_K and Q5_K share: the 256-element super-block of eight 32-element sub-blocks, f16 `d`
 * at 0, f16 `dmin` at 2 and 12 bytes of packed 6-bit (scale, min) pairs at 4; sub-block j has
 * element = d·sc[j]·q − dmin·mn[j]. (sc, mn) for j < 4: low 6 bits of byte j and of byte j+4;
 * for j ≥ 4: the low nibble of byte j+4 plus the top 2 bits of byte j−4 (as bits 4..5) for sc,
 * the high nibble of byte j+4 plus the top 2 bits of byte j for mn. The quants: see `formats/q4_k.ts`
 * and `formats/q5_k.ts`.
 */
import { clamp, randomBytes, randomF16, readF16, roundHalfAway, writeF16 } from "./block.ts";

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
export function levelOf(x: number, step: number, offset: number, nmax: number): number {
  return step > 0 ? clamp(roundHalfAway((x + offset) / step), 0, nmax) : 0;
}

/** Squared error of representing x[from..from+n) as step·q − offset. */
export function asymError(
  x: ArrayLike<number>,
  from: number,
  n: number,
  nmax: number,
  step: number,
  offset: number,
): number {
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
export function fitAsym(
  x: ArrayLike<number>,
  from: number,
  n: number,
  nmax: number,
): [number, number] {
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
export function encodeAsymBlock(
  x: ArrayLike<number>,
  from: number,
  dst: Uint8Array,
  at: number,
  nmax: number,
): Uint8Array {
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
export function decodeAsymBlock(
  src: Uint8Array,
  at: number,
  out: Float64Array,
  outAt: number,
  high: boolean,
): void {
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

/** A random Q4_K (`high` false) or Q5_K block: random scales and quants, `d` and `dmin` sized for ±1. */
export function randomAsymBlock(
  out: Uint8Array,
  at: number,
  next: () => number,
  high: boolean,
): void {
  const nmax = high ? 31 : 15;
  randomBytes(out, at + 4, (high ? 176 : 144) - 4, next);
  randomF16(out, at, 1 / (63 * nmax), next);
  randomF16(out, at + 2, 1 / 63, next);
}
