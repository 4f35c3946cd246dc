/**
 * The dense kernels (embedding, RMSNorm, per-head RMSNorm, RoPE, gated halves, scale in place)
 * against their float64 references (`reference/kernels/dense.ts`) over odd shapes and every
 * weight dtype.
 */
import { uploadBuffer } from "../buffers.ts";
import type { WeightDtype } from "../dtype.ts";
import {
  embeddingRef,
  gatedRef,
  headNormRef,
  rmsNormRef,
  ropeRef,
} from "../../reference/kernels/dense.ts";
import { ropeInvFreq, type RopeScaling } from "../../model/rope.ts";
import {
  prepareEmbedding,
  prepareGatedHalves,
  prepareHeadNorm,
  prepareRmsNorm,
  prepareRope,
  prepareScaleInPlace,
} from "./dense.ts";
import { uploadRopeFrequencies } from "./rope_frequencies.ts";
import { assertClose, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import {
  asF32,
  f32Buffer,
  outBuffer,
  runRead,
  seeded,
  u32Buffer,
  WEIGHT_DTYPES as DTYPES,
  weights,
} from "../../../test/support/kernel_harness.ts";

/**
 * RMSNorm (eps 1e-5) of `rows` seeded rows of `dim` (x, weights and y's prior contents from
 * `seeds`) into y, stored or added: y as the GPU leaves it, and float64's norm.
 */
async function rmsNormCase(
  device: GPUDevice,
  dtype: WeightDtype,
  rows: number,
  dim: number,
  [xSeed, wSeed, priorSeed]: [number, number, number],
  accumulate: boolean,
): Promise<{ got: Float32Array; normed: ReturnType<typeof rmsNormRef>; prior: Float64Array }> {
  const x = asF32(seeded(xSeed, rows * dim, 3));
  const w = weights(wSeed, dim, dtype, 1);
  const prior = asF32(seeded(priorSeed, rows * dim, 2));
  const y = f32Buffer(device, "rms:y", prior);
  const d = await prepareRmsNorm(device, {
    x: f32Buffer(device, "rms:x", x),
    weight: uploadBuffer(device, "rms:w", w.bytes),
    y,
    rows,
    dim,
    eps: 1e-5,
    dtype,
    accumulate,
  });
  const got = await runRead(device, [d], y, rows * dim);
  return { got, normed: rmsNormRef(x, w.values, dim, 1e-5), prior };
}

for (const dtype of DTYPES) {
  Deno.test(`embedding gathers ${dtype} rows; out-of-vocab ids give zeros`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      const [vocab, hidden] = [37, 19];
      const table = weights(1, vocab * hidden, dtype);
      const ids = [0, 36, 5, 5, 40, 17, 1];
      const out = outBuffer(device, "emb:out", ids.length * hidden);
      const embed = (more: { scale?: number } = {}) =>
        prepareEmbedding(device, {
          ids: u32Buffer(device, "emb:ids", ids),
          table: uploadBuffer(device, "emb:table", table.bytes),
          out,
          tokens: ids.length,
          hidden,
          vocab,
          dtype,
          ...more,
        });
      const got = await runRead(device, [await embed()], out, ids.length * hidden);
      assertClose(got, embeddingRef(ids, table.values, hidden), 0, 0, "embedding");
      // Scaled (an embedding multiplier): one f32 rounding of each product.
      const got2 = await runRead(device, [await embed({ scale: 0.37 })], out, ids.length * hidden);
      assertClose(got2, embeddingRef(ids, table.values, hidden, 0.37), 0, 2 ** -23, "scaled");
    });
  });

  Deno.test(`embedding over a ${dtype} table split into two chunks composes`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      const [vocab, hidden, split] = [37, 19, 21];
      const table = weights(2, vocab * hidden, dtype);
      const bytesPer = table.bytes.length / (vocab * hidden);
      const ids = [0, 36, 20, 21, 40, 17, 5];
      const out = outBuffer(device, "emb:out", ids.length * hidden);
      const idBuf = u32Buffer(device, "emb:ids", ids);
      const chunks = [[0, split], [split, vocab]] as const;
      const dispatches = [];
      for (const [rowStart, rowEnd] of chunks) {
        const bytes = table.bytes.slice(rowStart * hidden * bytesPer, rowEnd * hidden * bytesPer);
        const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
        padded.set(bytes);
        dispatches.push(
          await prepareEmbedding(device, {
            ids: idBuf,
            table: uploadBuffer(device, `emb:table${rowStart}`, padded),
            out,
            tokens: ids.length,
            hidden,
            vocab,
            dtype,
            rowStart,
            rowEnd,
          }),
        );
      }
      const got = await runRead(device, dispatches, out, ids.length * hidden);
      assertClose(got, embeddingRef(ids, table.values, hidden), 0, 0, "chunked embedding");
    });
  });

  Deno.test(`rmsnorm ${dtype} over dims 1, 63, 257, stored and added to y`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      for (const [rows, dim] of [[3, 1], [5, 63], [2, 257]] as const) {
        for (const accumulate of [false, true]) {
          const r = await rmsNormCase(
            device,
            dtype,
            rows,
            dim,
            [dim, dim + 1, dim + 2],
            accumulate,
          );
          const want = r.normed;
          if (accumulate) want.forEach((v, i) => want[i] = v + r.prior[i]!);
          // A few f32 roundings per output: the worst measured on lavapipe takes 15 % of this
          // bound (the bound was 1e-6 + 1e-5·|ref|). Added to y (|y| < 2), the sum may cancel:
          // its error is then relative to the terms, 1e-6 of 2 more.
          assertClose(
            r.got,
            want,
            accumulate ? 2.1e-6 : 1e-7,
            1e-6,
            `rmsnorm accumulate=${accumulate}`,
          );
        }
      }
    });
  });

  Deno.test(`rmsnorm ${dtype} added to y (a post-normed residual branch) over dims 1, 63, 257`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      for (const [rows, dim] of [[3, 1], [5, 63], [2, 257]] as const) {
        const r = await rmsNormCase(device, dtype, rows, dim, [dim + 5, dim + 7, dim + 6], true);
        // One more rounding than the stored norm (the add): the same bound over |prior| too.
        assertClose(
          r.got,
          r.normed.map((v, i) => v + r.prior[i]!),
          2e-7,
          1e-6,
          "rmsnorm accumulate",
        );
      }
    });
  });
}

for (const dtype of DTYPES) {
  Deno.test(`per-head rmsnorm in place, ${dtype}: strided heads of odd widths, the rest untouched`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      // [tokens, heads, headDim, stride, offset]: q heads of a q/k/v row, k heads after them,
      // one head per token, heads wider than a workgroup.
      const shapes: [number, number, number, number, number][] = [
        [3, 5, 6, 52, 0],
        [7, 2, 6, 52, 30],
        [1, 1, 1, 3, 2],
        [2, 3, 257, 800, 11],
      ];
      for (const [tokens, heads, headDim, stride, offset] of shapes) {
        const n = tokens * stride + offset;
        const x = asF32(seeded(headDim + tokens, n, 2));
        const w = weights(headDim + 7, headDim, dtype, 1);
        const buf = f32Buffer(device, "head_norm:x", x);
        const shape = {
          tokens,
          heads: heads!,
          headDim: headDim!,
          stride: stride!,
          offset: offset!,
        };
        const d = await prepareHeadNorm(device, {
          x: buf,
          weight: uploadBuffer(device, "head_norm:w", w.bytes),
          ...shape,
          eps: 1e-6,
          dtype,
        });
        const want = headNormRef(x, w.values, shape, 1e-6);
        const got = await runRead(device, [d], buf, n);
        // Exactly as stored outside the heads; within the plain rmsnorm's bound inside them.
        for (let i = 0; i < n; i++) {
          const inHead = i >= offset && (i - offset) % stride < heads * headDim &&
            i < offset + (tokens - 1) * stride + heads * headDim;
          if (!inHead && got[i] !== x[i]) throw new Error(`element ${i} moved`);
        }
        assertClose(got, want, 1e-7, 1e-6, `head_norm ${shape.tokens}x${heads}x${headDim}`);
      }
    });
  });
}

const SCALINGS: RopeScaling[] = [
  { type: "default" },
  { type: "linear", factor: 4 },
  {
    type: "llama3",
    factor: 8,
    lowFreqFactor: 1,
    highFreqFactor: 4,
    originalMaxPositionEmbeddings: 64,
  },
];

for (const scaling of SCALINGS) {
  Deno.test(`rope (${scaling.type}) on odd token counts and positions past the original max`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      const [heads, hd] = [3, 32];
      const positions = [0, 1, 63, 200, 1023, 4097, 65537, 1000003];
      const tokens = positions.length;
      const inv = ropeInvFreq(hd, 10000, scaling);
      const x = asF32(seeded(7, tokens * heads * hd));
      const buf = f32Buffer(device, "rope:x", x);
      const d = await prepareRope(device, {
        x: buf,
        positions: u32Buffer(device, "rope:pos", positions),
        frequencies: uploadRopeFrequencies(device, "rope:frequencies", inv),
        tokens,
        heads,
        headDim: hd,
      });
      // The angle p·θ is reduced modulo a turn in integers, so it errs by one rounding of the
      // remainder (under 5e-8 rad) at any position, where an f32 angle would err by half its
      // ulp (3e-5 rad at 1023, 0.03 rad at 1000003). sin and cos are within about two f32
      // ulps and the rotation adds two roundings: a few 1e-7 on pairs of norm ≤ √2 (measured
      // on lavapipe: 1.1e-7).
      assertClose(
        await runRead(device, [d], buf, x.length),
        ropeRef(x, positions, inv, heads, hd),
        3e-7,
        2 ** -22,
        "rope",
      );
    });
  });
}

Deno.test("llama3 inverse frequencies blend between the two wavelength bands", () => {
  const base = ropeInvFreq(64, 500000);
  const scaled = ropeInvFreq(64, 500000, {
    type: "llama3",
    factor: 8,
    lowFreqFactor: 1,
    highFreqFactor: 4,
    originalMaxPositionEmbeddings: 8192,
  });
  // Highest frequency unchanged, lowest divided by the factor, the middle strictly between.
  assertClose([scaled[0]!], [base[0]!], 0, 1e-12);
  assertClose([scaled[31]!], [base[31]! / 8], 0, 1e-12);
  const mid = scaled.findIndex((f, i) => f < base[i]! && f > base[i]! / 8);
  if (mid < 0) throw new Error("no smoothly blended frequency");
});

for (const act of ["silu", "gelu_tanh"] as const) {
  Deno.test(`gated activation (${act}) over stacked gate/up rows of odd width`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      const [rows, width] = [3, 333];
      // Gates up to 12 in size: GELU-tanh saturates at both ends (to g and to -0).
      const stacked = asF32(seeded(1, rows * 2 * width, act === "silu" ? 4 : 12));
      const out = outBuffer(device, "glu:out", rows * width);
      const d = await prepareGatedHalves(device, {
        stacked: f32Buffer(device, "glu:stacked", stacked),
        out,
        rows,
        width,
        act,
      });
      const want = new Float64Array(rows * width);
      for (let r = 0; r < rows; r++) {
        const row = stacked.subarray(r * 2 * width, (r + 1) * 2 * width);
        want.set(gatedRef(row.subarray(0, width), row.subarray(width), act), r * width);
      }
      // exp (or tanh), a division and a product per output: the worst SiLU measured on lavapipe
      // takes 17 % of this bound (the bound was 1e-6 + 1e-5·|ref|).
      const got = await runRead(device, [d], out, rows * width);
      assertClose(got, want, 1.5e-7, 1.5e-6, act);
    });
  });
}

Deno.test("scale and soft-cap in place over an odd count, values past the cap's saturation", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const count = 1031;
    const x = asF32(seeded(5, count, 40));
    for (
      const [op, value] of [["scale", 5.656854249492381], ["softcap", 8], ["softcap", 0.3]] as const
    ) {
      const buf = f32Buffer(device, `${op}:x`, x);
      const d = await prepareScaleInPlace(device, { x: buf, count, op, value });
      const want = Float64Array.from(
        x,
        (v) => op === "scale" ? v * value : value * Math.tanh(v / value),
      );
      // One or two f32 roundings and an exp: within a few ulps of |ref| (values up to 40·5.7).
      assertClose(await runRead(device, [d], buf, count), want, 1e-6, 1e-6, `${op} ${value}`);
    }
    const bad = await prepareScaleInPlace(device, {
      x: outBuffer(device, "cap:bad", 4),
      count: 4,
      op: "softcap",
      value: 0,
    }).then(() => undefined, (e) => e);
    if (!(bad instanceof Error) || !bad.message.includes("softcap 0")) {
      throw new Error(`a soft-cap of 0 was not refused: ${bad}`);
    }
  });
});
