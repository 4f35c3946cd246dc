/**
 * The attention kernels' softmax where its max subtraction matters: scores past ln(f32 max) ≈
 * 88.72, where exp overflows in f32. Query scale 40 on keys and queries in [-1, 1] takes the
 * largest scores to 140-170; the kernels (the `rows` kernel of the cpu paths, the tiled kernel
 * of the gpu paths; prefill and split decode) must give the float64 reference's output
 * (`pagedAttentionRef`). Planted: the same attention computed in f32 without the max
 * subtraction, through the same comparison, must be rejected (its weights are Infinity /
 * Infinity = NaN); on the unscaled scores it is accepted, so the large scores, not the mutant
 * alone, decide. (`mutation_test.ts` plants the same mistake in the float64 model pass.)
 */
import { ok } from "node:assert/strict";
import { decodeKv, pagedAttentionRef, type PagedKv } from "../../reference/kernels/attention.ts";
import { prepareAttention, prepareKvWrite } from "./attention.ts";
import type { PathKind } from "../paths.ts";
import { submitDispatches } from "../dispatch.ts";
import { readBuffer } from "../buffers.ts";
import { testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import {
  asF32,
  f32Buffer,
  outBuffer,
  runRead,
  seeded,
  u32Buffer,
} from "../../../test/support/kernel_harness.ts";

const HEADS = 4, KV_HEADS = 2, HEAD_DIM = 16, BLOCK = 16, LEN = 40;
/** The query scale that takes the largest scores past 88.72. */
const BIG = 40;
const F32_U = 2 ** -24;

/**
 * Worst |got - want| over the bound: rounding a score s to f32 moves its weight by about u·|s|
 * (values in [-1, 1]), so 1e-6 + 8·u·max|s|; NaN when `got` has a NaN.
 */
function worstRatio(got: ArrayLike<number>, want: ArrayLike<number>, maxScore: number): number {
  const bound = 1e-6 + 8 * F32_U * maxScore;
  let worst = 0;
  for (let i = 0; i < want.length; i++) {
    const e = Math.abs(got[i]! - want[i]!);
    if (Number.isNaN(e)) return NaN;
    worst = Math.max(worst, e / bound);
  }
  return worst;
}

/** Where key `j` of query head `h` starts in the cache (one sequence, table offset 0). */
function keyBase(kv: PagedKv, h: number, j: number): number {
  const kvh = Math.floor(h / (HEADS / KV_HEADS));
  return ((kv.blockTable[Math.floor(j / BLOCK)]! * BLOCK + (j % BLOCK)) * KV_HEADS + kvh) *
    HEAD_DIM;
}

/** The planted mistake: attention in f32 arithmetic, its softmax without the max. */
function noMaxF32(
  q: ArrayLike<number>,
  kv: PagedKv,
  positions: number[],
  scale: number,
): Float64Array {
  const f = Math.fround;
  const out = new Float64Array(positions.length * HEADS * HEAD_DIM);
  positions.forEach((p, t) => {
    for (let h = 0; h < HEADS; h++) {
      const qb = (t * HEADS + h) * HEAD_DIM;
      const w = Array.from({ length: p + 1 }, (_, j) => {
        let dot = 0;
        for (let d = 0; d < HEAD_DIM; d++) {
          dot = f(dot + f(q[qb + d]! * kv.k[keyBase(kv, h, j) + d]!));
        }
        return f(Math.exp(f(dot * scale)));
      });
      const sum = w.reduce((s, x) => f(s + x), 0);
      w.forEach((x, j) => {
        for (let d = 0; d < HEAD_DIM; d++) {
          out[qb + d] = f(out[qb + d]! + f(f(x / sum) * kv.v[keyBase(kv, h, j) + d]!));
        }
      });
    }
  });
  return out;
}

/** The largest |score| of any query over its keys at `scale`. */
function maxScore(q: ArrayLike<number>, kv: PagedKv, positions: number[], scale: number): number {
  let m = 0;
  positions.forEach((p, t) => {
    for (let h = 0; h < HEADS; h++) {
      const qb = (t * HEADS + h) * HEAD_DIM;
      for (let j = 0; j <= p; j++) {
        let dot = 0;
        for (let d = 0; d < HEAD_DIM; d++) dot += q[qb + d]! * kv.k[keyBase(kv, h, j) + d]!;
        m = Math.max(m, Math.abs(dot * scale));
      }
    }
  });
  return m;
}

/** Fill a cache with LEN tokens, run attention for `positions` on `paths`; output and cache. */
async function runKernel(paths: PathKind, positions: number[], scale: number, splits?: number) {
  const { device } = await testGpu(paths);
  return await withErrorScopes(device, async () => {
    const row = KV_HEADS * HEAD_DIM, blocks = Math.ceil(LEN / BLOCK);
    const table = Array.from({ length: blocks }, (_, i) => blocks - 1 - i);
    const slots = Array.from({ length: LEN }, (_, j) => table[Math.floor(j / BLOCK)]! * BLOCK);
    slots.forEach((s, j) => slots[j] = s + (j % BLOCK));
    const kCache = outBuffer(device, "smax:k", blocks * BLOCK * row);
    const vCache = outBuffer(device, "smax:v", blocks * BLOCK * row);
    const write = await prepareKvWrite(device, {
      k: f32Buffer(device, "smax:k_new", asF32(seeded(1, LEN * row))),
      v: f32Buffer(device, "smax:v_new", asF32(seeded(2, LEN * row))),
      slots: u32Buffer(device, "smax:slots", slots),
      kCache,
      vCache,
      tokens: LEN,
      kvHeads: KV_HEADS,
      headDim: HEAD_DIM,
    });
    submitDispatches(device, [write], "kv_write");
    const n = positions.length * HEADS * HEAD_DIM;
    const q = asF32(seeded(3, n));
    const out = outBuffer(device, "smax:out", n);
    const { dispatches, kernel } = await prepareAttention(device, {
      q: f32Buffer(device, "smax:q", q),
      kCache,
      vCache,
      positions: u32Buffer(device, "smax:pos", positions),
      tableOffsets: u32Buffer(device, "smax:off", positions.map(() => 0)),
      blockTable: u32Buffer(device, "smax:table", table),
      out,
      tokens: positions.length,
      heads: HEADS,
      kvHeads: KV_HEADS,
      headDim: HEAD_DIM,
      blockSize: BLOCK,
      maxKeys: LEN,
      scale,
      ...(splits ? { splits } : {}),
    });
    const got = await runRead(device, dispatches, out, n);
    const kv: PagedKv = {
      k: decodeKv(await readBuffer(device, kCache), "f32"),
      v: decodeKv(await readBuffer(device, vCache), "f32"),
      blockSize: BLOCK,
      kvHeads: KV_HEADS,
      headDim: HEAD_DIM,
      blockTable: table,
    };
    return { got, q, kv, kernel };
  });
}

/** Prefill: every position of the sequence; decode: its last, the keys split in 3. */
const CASES: [string, number[], number | undefined][] = [
  ["prefill", Array.from({ length: LEN }, (_, i) => i), undefined],
  ["split decode", [LEN - 1], 3],
];

for (const paths of ["cpu", "gpu"] as const) {
  Deno.test(`attention softmax (${paths} paths): scores past 88.72 match float64, prefill and split decode; f32 without the max subtraction is rejected`, async () => {
    for (const [what, pos, splits] of CASES) {
      const { got, q, kv, kernel } = await runKernel(paths, pos, BIG, splits);
      const offsets = pos.map(() => 0);
      const top = maxScore(q, kv, pos, BIG);
      const want = pagedAttentionRef(q, kv, pos, offsets, HEADS, { scale: BIG });
      const real = worstRatio(got, want, top);
      const planted = worstRatio(noMaxF32(q, kv, pos, BIG), want, top);
      const scale = 1 / Math.sqrt(HEAD_DIM);
      const small = pagedAttentionRef(q, kv, pos, offsets, HEADS, { scale });
      const control = worstRatio(noMaxF32(q, kv, pos, scale), small, maxScore(q, kv, pos, scale));
      console.log(
        `  ${paths} ${kernel} ${what}: max score ${top.toFixed(1)}; kernel ${real.toFixed(3)} ` +
          `of the bound; no max in f32: ${planted} (unscaled: ${control.toFixed(3)})`,
      );
      ok(top > 88.73, `${what}: the largest score ${top} does not overflow f32's exp`);
      ok(real <= 1, `${paths} ${what}: ${real} of the bound`);
      ok(!(planted <= 1), `${what}: the softmax without max passed (${planted})`);
      ok(control <= 1, `${what}: the unscaled control was rejected (${control})`);
    }
  });
}
