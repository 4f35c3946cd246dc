import { ok, strictEqual as equal } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { storageBuffer, uploadBuffer } from "../buffers.ts";
import { QUANT_FORMATS, QUANT_TYPES, quantize, type QuantType } from "../formats/registry.ts";
import { quantEmbeddingRef, quantMatvecRef } from "../../reference/kernels/quant.ts";
import { randomBlocks } from "../formats/random_blocks.ts";
import { loadQuantTables } from "../formats/tables.ts";
import { plantOneStep, uniform } from "../../../test/support/quant_mutation.ts";
import { type Epilogue, isGated } from "./args.ts";
import { prepareMatvec, prepareQuantEmbedding } from "./matvec.ts";
import {
  assertClose,
  assertSumsClose,
  sumsTolerance,
  testGpu,
  withErrorScopes,
} from "../../../test/support/gpu.ts";
import {
  asF32,
  f32Buffer,
  runRead,
  seeded,
  u32Buffer,
} from "../../../test/support/kernel_harness.ts";

// The references dequantize tabled formats with their tables' data files.
await loadQuantTables();

/**
 * The f32 bound of every product here (`sumsTolerance`): c·u·(√k + 4)·(rms(ref) + |ref|).
 * Measured on lavapipe over every case of this file (`KILN_TOL_REPORT=1`), the worst error of a
 * stored or accumulated product is 0.27 of that bound at c = 1, of a SwiGLU product (two sums
 * multiplied) 0.53: c = 2 and 3 leave each 6x to 7x above the worst.
 */
const SUM_C = 2;
const SWIGLU_C = 3;
/** One-step errors (of 200 per format) the bound may miss: measured 0 to 4 (a tiny step·|x|). */
const MAX_MISSES = 6;

/** Row lengths: an odd number of blocks (9) for the 32-element formats, two K-quant blocks. */
const K = (t: QuantType) => QUANT_FORMATS[t].blockSize === 32 ? 288 : 512;

interface Case {
  epilogue: Epilogue;
  norm: boolean;
  bias: boolean;
  tpr: number;
  m: number;
  n: number;
  /** Write into columns [3, 3 + n) of rows n + 5 wide. */
  window: boolean;
  /** The epilogue's scale (default 1). */
  scale?: number;
}

/**
 * Per format: threads per row and m for the store and accumulate cases, and for the SwiGLU cases.
 * Each pipeline compiled costs seconds on lavapipe (more with more rows), a dispatch of these
 * shapes milliseconds, so each format gets two pipelines, and the thread paths, m = 1, 3 and 9
 * (two z-slices) and the epilogues are spread over the formats: every thread path sees every
 * epilogue and every m, every format both thread paths and every epilogue.
 */
const PLAN: readonly (readonly [number, number, number, number])[] = [
  [1, 9, 32, 3],
  [32, 9, 1, 1],
  [1, 3, 32, 3],
  [32, 1, 1, 1],
  [1, 1, 32, 3],
  [32, 3, 1, 1],
  [1, 3, 32, 1],
  [32, 9, 1, 3],
  [1, 9, 32, 1],
];

/** Store and accumulate, each with and without norm and bias, then SwiGLU with and without norm. */
function cases(format: number): Case[] {
  const [tprA, mA, tprB, mB] = PLAN[format % PLAN.length]!;
  const out: Case[] = [];
  const push = (c: Omit<Case, "n" | "window">) =>
    out.push({ ...c, n: out.length % 2 ? 37 : 13, window: out.length % 4 < 2 });
  for (const epilogue of ["store", "accumulate"] as const) {
    for (const norm of [false, true]) {
      for (const bias of [false, true]) push({ epilogue, norm, bias, tpr: tprA, m: mA });
    }
  }
  for (const norm of [false, true]) {
    push({ epilogue: "swiglu", norm, bias: false, tpr: tprB, m: mB });
  }
  push({ epilogue: "geglu", norm: true, bias: false, tpr: tprA, m: mB });
  // Scaled: a residual branch times a multiplier, logits divided by a constant.
  push({ epilogue: "accumulate", norm: true, bias: true, tpr: tprA, m: mA, scale: 0.37 });
  push({ epilogue: "store", norm: false, bias: true, tpr: tprB, m: mB, scale: -0.5 });
  return out;
}

async function runCase(device: GPUDevice, type: QuantType, c: Case, seed: number): Promise<void> {
  const { epilogue, m, n } = c;
  const k = K(type);
  const rows = isGated(epilogue) ? 2 * n : n;
  const y0 = c.window ? 3 : 0;
  const ldy = c.window ? n + 5 : n;
  const w = randomBlocks(type, rows * k, seed);
  const x = asF32(seeded(seed + 1, m * k));
  const gamma = asF32(seeded(seed + 2, k));
  const bias = asF32(seeded(seed + 3, y0 + n));
  const prior = asF32(seeded(seed + 4, m * ldy));
  const eps = 1e-5;
  const y = f32Buffer(device, "mvq:y", prior);
  const d = await prepareMatvec(device, {
    x: f32Buffer(device, "mvq:x", x),
    w: uploadBuffer(device, "mvq:w", w),
    y,
    m,
    n,
    k,
    type,
    epilogue,
    threadsPerRow: c.tpr,
    ...(c.scale !== undefined ? { scale: c.scale } : {}),
    ...(c.bias ? { bias: f32Buffer(device, "mvq:b", bias) } : {}),
    ...(c.norm ? { norm: { weight: f32Buffer(device, "mvq:g", gamma), eps } } : {}),
    ...(c.window ? { ldy, y0 } : {}),
  });
  const got = await runRead(device, [d], y, m * ldy);
  const ref = quantMatvecRef(type, w, x, m, n, k, {
    epilogue,
    prior,
    ldy,
    y0,
    ...(c.scale !== undefined ? { scale: c.scale } : {}),
    ...(c.bias ? { bias } : {}),
    ...(c.norm ? { norm: { weight: gamma, eps } } : {}),
  });
  const what = `${type} ${JSON.stringify(c)}`;
  assertSumsClose(got, ref, k, isGated(epilogue) ? SWIGLU_C : SUM_C, what);
}

for (const type of QUANT_TYPES) {
  Deno.test(`matvec ${type}: every epilogue × norm × bias, both thread paths, odd m and n, output windows`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      let seed = 10;
      for (const c of cases(QUANT_TYPES.indexOf(type))) await runCase(device, type, c, seed += 7);
    });
  });
}

Deno.test("matvec: the quantizer's own blocks, rows longer than one round of loads", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    for (const type of ["Q4_0", "Q5_K"] as const) {
      const [m, n, k] = [2, 19, QUANT_FORMATS[type].blockSize === 32 ? 1024 : 1536];
      const w = quantize(type, Float32Array.from(seeded(5, n * k)), n, k);
      const x = asF32(seeded(6, m * k));
      const y = storageBuffer(device, "mvq:y", m * n * 4);
      const d = await prepareMatvec(device, {
        x: f32Buffer(device, "mvq:x", x),
        w: uploadBuffer(device, "mvq:w", w),
        y,
        m,
        n,
        k,
        type,
        threadsPerRow: 2, // 4 slices in flight per thread: 8 slices per round, 32 or 48 rounds
      });
      const got = await runRead(device, [d], y, m * n);
      assertSumsClose(got, quantMatvecRef(type, w, x, m, n, k), k, SUM_C, `${type} k${k}`);
    }
  });
});

/**
 * The comparison above must see a wrong weight, not only a wrong kernel: 200 rows, each with a
 * one-step error planted in one weight of a random block (`plantOneStep`), run on the GPU and
 * compared row by row with the reference on the unplanted weights. A row whose error stays within
 * the bound is a miss. The error is step·x at the planted column, so only a tiny |x| or block
 * scale hides it; the old bound (2e-5·k + 1e-5·|ref|, 0.006 to 0.01 here) missed most of them.
 */
Deno.test("matvec: a one-step error in one weight of a random block fails the comparison", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const n = 200;
    for (const [ti, type] of QUANT_TYPES.entries()) {
      const k = K(type);
      const perRow = k / QUANT_FORMATS[type].blockSize;
      const w = randomBlocks(type, n * k, 100 + ti);
      const planted = w.slice();
      const rand = uniform(200 + ti);
      const x = asF32(seeded(300 + ti, k));
      // The error each plant makes in its row's output: step · x at the planted column.
      // A block where no pick moves exactly one weight (an i-quant grid index whose neighbours
      // all differ in several values) passes the plant to the row's next block.
      const plantedErr = Array.from({ length: n }, (_, r) => {
        const first = Math.floor(rand() * perRow);
        for (let b = 0; b < perRow; b++) {
          const block = r * perRow + (first + b) % perRow;
          try {
            const p = plantOneStep(type, planted, block, rand);
            return Math.abs(p.delta * x[p.element - r * k]!);
          } catch (e) {
            if (!String(e).includes("no weight with a nonzero step")) throw e;
          }
        }
        throw new Error(`${type}: no block of row ${r} takes a one-weight step`);
      });
      const run = async (weights: Uint8Array) => {
        const y = storageBuffer(device, "mvq:y", n * 4);
        const d = await prepareMatvec(device, {
          x: f32Buffer(device, "mvq:x", x),
          w: uploadBuffer(device, "mvq:w", weights),
          y,
          m: 1,
          n,
          k,
          type,
        });
        return await runRead(device, [d], y, n);
      };
      const ref = quantMatvecRef(type, w, x, 1, n, k);
      assertSumsClose(await run(w), ref, k, SUM_C, `${type}: unplanted`);
      const got = await run(planted);
      const { tol, eps } = sumsTolerance(ref, k, SUM_C);
      const missed = (t: number, e: number) =>
        [...ref.keys()].filter((r) => Math.abs(got[r]! - ref[r]!) <= t + Math.abs(ref[r]!) * e);
      const misses = missed(tol, eps);
      const miss = misses.length;
      const hidden = misses.length
        ? `largest planted error missed ${
          Math.max(...misses.map((r) => plantedErr[r]!)).toExponential(1)
        }`
        : "none missed";
      const smallest = Math.min(...plantedErr.filter((_, r) => !misses.includes(r)));
      console.log(
        `  ${type}: caught ${n - miss}/${n} (bound ${tol.toExponential(1)} + ${
          eps.toExponential(1)
        }·|ref|; ${hidden}, smallest caught ${smallest.toExponential(1)}); the old bound caught ${
          n - missed(2e-5 * k, 1e-5).length
        }/${n}`,
      );
      ok(miss <= MAX_MISSES, `${type}: ${miss} of ${n} one-step errors within the bound`);
      for (const r of misses) {
        const bound = tol + Math.abs(ref[r]!) * eps;
        ok(plantedErr[r]! <= 2 * bound, `${type} row ${r}: error ${plantedErr[r]} > 2 × ${bound}`);
      }
    }
  });
});

/** Hidden sizes: an odd number of blocks. */
const HIDDEN = (t: QuantType) => QUANT_FORMATS[t].blockSize === 32 ? 96 : 768;

Deno.test("embedding_quant: two table chunks compose into one output; out-of-vocabulary ids give zeros", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const vocab = 11;
    const split = 5;
    const ids = [4, 0, 11, 5, 10, 4, 4000000000, 7];
    for (const [ti, type] of QUANT_TYPES.entries()) {
      const hidden = HIDDEN(type);
      const table = randomBlocks(type, vocab * hidden, 30 + ti);
      const rowBytes = (hidden / QUANT_FORMATS[type].blockSize) * QUANT_FORMATS[type].blockBytes;
      const chunks = [[0, split], [split, vocab]] as const;
      const sentinel = new Float64Array(ids.length * hidden).fill(7.5);
      const out = f32Buffer(device, "embq:out", sentinel);
      const idBuf = u32Buffer(device, "embq:ids", ids);
      let ref: Float64Array = sentinel;
      for (const [rowStart, rowEnd] of chunks) {
        const bytes = table.subarray(rowStart * rowBytes, rowEnd * rowBytes);
        const d = await prepareQuantEmbedding(device, {
          ids: idBuf,
          table: uploadBuffer(device, "embq:table", bytes),
          out,
          tokens: ids.length,
          hidden,
          type,
          rowStart,
          rowEnd,
          vocab,
        });
        const got = await runRead(device, [d], out, ids.length * hidden);
        ref = quantEmbeddingRef(type, bytes, ids, hidden, rowStart, rowEnd, vocab, ref);
        // After the first chunk, tokens of the second and out-of-vocabulary ones are untouched.
        assertClose(got, ref, 1e-7, 1e-6, `${type} rows [${rowStart}, ${rowEnd})`);
      }
      const whole = quantEmbeddingRef(type, table, ids, hidden, 0, vocab, vocab);
      assertClose(ref, whole, 0, 0, `${type}: chunks vs one table`);
      // The whole table scaled (an embedding multiplier): one f32 rounding of each product.
      const scaled = await prepareQuantEmbedding(device, {
        ids: idBuf,
        table: uploadBuffer(device, "embq:table", table),
        out,
        tokens: ids.length,
        hidden,
        type,
        rowStart: 0,
        rowEnd: vocab,
        vocab,
        scale: -2.5,
      });
      const got = await runRead(device, [scaled], out, ids.length * hidden);
      assertClose(got, whole.map((v) => v * -2.5), 1e-7, 1e-6, `${type} scaled`);
      ok(whole.subarray(2 * hidden, 3 * hidden).every((v) => v === 0), "id 11 gives zeros");
      ok(whole.some((v) => v !== 0), "rows gathered");
    }
  });
});

async function rejectsInvalid(p: Promise<unknown>, includes: string): Promise<void> {
  try {
    await p;
  } catch (e) {
    ok(e instanceof EngineError, String(e));
    equal(e.type, "InvalidArgument");
    ok(e.message.includes(includes), e.message);
    return;
  }
  throw new Error(`no error (expected one mentioning ${includes})`);
}

Deno.test("matvec refuses bad shapes, windows, epilogues and short buffers", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const buf = storageBuffer(device, "mvq:any", 1 << 16);
    const small = storageBuffer(device, "mvq:small", 64);
    const args = { x: buf, w: buf, y: buf, m: 1, n: 4, k: 576 };
    const q8 = { ...args, k: 64, type: "Q8_0" as const };
    await rejectsInvalid(prepareMatvec(device, { ...args, type: "Q4_K" }), "row length 576");
    await rejectsInvalid(prepareMatvec(device, { ...args, type: "Q6_K" }), "row length 576");
    await rejectsInvalid(
      prepareMatvec(device, { ...args, k: 40, type: "Q8_0" }),
      "row length 40",
    );
    await rejectsInvalid(
      prepareMatvec(device, { ...args, type: "Q7_K" as QuantType }),
      "unknown quantization type",
    );
    await rejectsInvalid(prepareMatvec(device, { ...q8, m: 0 }), "m must be");
    await rejectsInvalid(prepareMatvec(device, { ...q8, w: small }), "w holds 64");
    await rejectsInvalid(
      prepareMatvec(device, { ...q8, bias: small, n: 32 }),
      "bias holds 64",
    );
    await rejectsInvalid(prepareMatvec(device, { ...q8, ldy: 6, y0: 3 }), "ldy 6");
    await rejectsInvalid(prepareMatvec(device, { ...q8, ldy: 3 }), "ldy 3");
    await rejectsInvalid(
      prepareMatvec(device, { ...q8, epilogue: "swiglu", bias: buf }),
      "no bias with the swiglu",
    );
    await rejectsInvalid(
      prepareMatvec(device, { ...q8, epilogue: "gelu" as Epilogue }),
      "unknown epilogue",
    );
    await rejectsInvalid(
      prepareMatvec(device, { ...q8, epilogue: "swiglu", scale: 2 }),
      "no scale with the swiglu",
    );
    await rejectsInvalid(prepareMatvec(device, { ...q8, scale: NaN }), "scale must be finite");
    await rejectsInvalid(prepareMatvec(device, { ...q8, threadsPerRow: 3 }), "threadsPerRow");
    await rejectsInvalid(
      prepareMatvec(device, { ...q8, norm: { weight: small, eps: 1e-5 }, k: 32 * 17 }),
      "norm weight holds 64",
    );
    await rejectsInvalid(prepareMatvec(device, { ...q8, y: small, m: 5 }), "y holds 64");
  });
});

Deno.test("embedding_quant refuses bad chunks and row lengths", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const buf = storageBuffer(device, "embq:any", 1 << 16);
    const small = storageBuffer(device, "embq:small", 64);
    const args = {
      ids: buf,
      table: buf,
      out: buf,
      tokens: 2,
      hidden: 64,
      type: "Q8_0" as const,
      rowStart: 0,
      rowEnd: 10,
      vocab: 10,
    };
    await rejectsInvalid(prepareQuantEmbedding(device, { ...args, hidden: 48 }), "row length 48");
    await rejectsInvalid(prepareQuantEmbedding(device, { ...args, rowEnd: 11 }), "rows [0, 11)");
    await rejectsInvalid(prepareQuantEmbedding(device, { ...args, rowStart: 10 }), "rows [10, 10)");
    await rejectsInvalid(
      prepareQuantEmbedding(device, { ...args, table: small }),
      "table holds 64",
    );
    await rejectsInvalid(prepareQuantEmbedding(device, { ...args, tokens: 0 }), "tokens must be");
  });
});
