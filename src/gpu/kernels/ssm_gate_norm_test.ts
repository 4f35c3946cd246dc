/**
 * Mamba2's D skip, SiLU gate and grouped RMSNorm (`ssm_gate_norm.wgsl`) against its float64
 * reference over odd shapes and token counts, with y, x and z read as slices of fused rows;
 * saturated gates, a group of zeros (only eps keeps it finite), inputs small enough that eps
 * dominates, planted errors (the norm over the whole row, eps left out), and refused arguments.
 */
import assert from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { readF32 } from "../buffers.ts";
import { submitDispatches } from "../dispatch.ts";
import { ssmGateNormRef, type SsmGateNormRefArgs } from "../../reference/kernels/ssm_gate_norm.ts";
import { prepareSsmGateNorm, type SsmGateNormArgs } from "./ssm_gate_norm.ts";
import { assertClose, F32_U, rms, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import { asF32, f32Buffer, seeded } from "../../../test/support/kernel_harness.ts";

interface Shape {
  heads: number;
  headDim: number;
  groups: number;
}

/** Out's initial contents, all overwritten by the kernel. */
const SENTINEL = 777;
/**
 * The bound's factor over f32 roundoff: each output is a group's f32 sum of squares (√width
 * roundings as a random walk) and a few roundings (the skip, exp, the gate, the scale), so
 * `tol + |ref|·eps` with eps = C·u·(√width + 4) and tol = eps·rms(ref). On lavapipe the worst
 * element over these tests uses 18% of the bound (1.1e-6 at |ref| up to 3.3; `KILN_TOL_REPORT=1`
 * prints each case), so C is over 5x the measured error.
 */
const C = 3;

/** Seeded dense inputs; `scale` sizes y and x; the first token's z saturates both ways. */
function makeInputs(shape: Shape, tokens: number, seed: number, scale = 1, eps = 1e-5) {
  const inner = shape.heads * shape.headDim;
  const z = asF32(seeded(seed + 2, tokens * inner, 4));
  z[0] = 30;
  if (z.length > 1) z[1] = -100;
  if (z.length > 2) z[2] = -30;
  const args: SsmGateNormRefArgs = {
    ...shape,
    tokens,
    eps,
    y: asF32(seeded(seed, tokens * inner, scale)),
    x: asF32(seeded(seed + 1, tokens * inner, scale)),
    z,
    d: asF32(seeded(seed + 3, shape.heads, 2)),
    weight: asF32(Array.from(seeded(seed + 4, inner), (v) => 1 + 0.5 * v)),
  };
  return args;
}

/**
 * Run the kernel with z, x (and y unless `yApart`) packed in one buffer of fused rows
 * [2 pad | z | 3 pad | x | y | 1 pad]; apart, y has rows of inner + 5 at offset 4.
 */
async function onGpu(device: GPUDevice, r: SsmGateNormRefArgs, yApart: boolean) {
  const inner = r.heads * r.headDim, width = 2 + inner + 3 + 2 * inner + 1;
  const fused = new Float64Array(r.tokens * width).fill(-9);
  const yRows = new Float64Array(r.tokens * (inner + 5)).fill(-9);
  const at = { z: 2, x: 5 + inner, y: 5 + 2 * inner };
  for (let t = 0; t < r.tokens; t++) {
    const row = (a: ArrayLike<number>) => Array.from(a).slice(t * inner, (t + 1) * inner);
    fused.set(row(r.z), t * width + at.z);
    fused.set(row(r.x), t * width + at.x);
    if (yApart) yRows.set(row(r.y), t * (inner + 5) + 4);
    else fused.set(row(r.y), t * width + at.y);
  }
  const buf = f32Buffer(device, "gate_norm:fused", fused);
  const out = f32Buffer(device, "gate_norm:out", new Array(r.tokens * inner).fill(SENTINEL));
  const d = await prepareSsmGateNorm(device, {
    ...r,
    y: yApart
      ? { buffer: f32Buffer(device, "gate_norm:y", yRows), offset: 4, stride: inner + 5 }
      : { buffer: buf, offset: at.y, stride: width },
    x: { buffer: buf, offset: at.x, stride: width },
    z: { buffer: buf, offset: at.z, stride: width },
    d: f32Buffer(device, "gate_norm:d", r.d),
    weight: f32Buffer(device, "gate_norm:w", r.weight),
    out,
  });
  submitDispatches(device, [d], "test");
  return await readF32(device, out, r.tokens * inner);
}

/** The bound for outputs `ref` normed over groups of `width` (see {@linkcode C}). */
function bound(ref: Float64Array, width: number) {
  const eps = C * F32_U * (Math.sqrt(width) + 4);
  return { tol: eps * rms(ref), eps };
}

const SHAPES: Shape[] = [
  { heads: 3, headDim: 12, groups: 1 },
  { heads: 3, headDim: 12, groups: 3 },
  { heads: 5, headDim: 7, groups: 5 },
];

for (const shape of SHAPES) {
  for (const tokens of [1, 4, 9]) {
    const name = `heads ${shape.heads}, headDim ${shape.headDim}, groups ${shape.groups}, ` +
      `${tokens} token${tokens > 1 ? "s" : ""}`;
    Deno.test(`ssm_gate_norm: ${name}, strided rows`, async () => {
      const { device } = await testGpu();
      await withErrorScopes(device, async () => {
        const r = makeInputs(shape, tokens, 17 * tokens + shape.groups);
        const ref = ssmGateNormRef(r);
        const b = bound(ref, (shape.heads * shape.headDim) / shape.groups);
        for (const yApart of [false, true]) {
          const out = await onGpu(device, r, yApart);
          assertClose(out, ref, b.tol, b.eps, `gate_norm ${name} yApart=${yApart}`);
        }
        // Planted error: the norm over the whole row instead of per group.
        if (shape.groups > 1) {
          const out = await onGpu(device, r, false);
          const wrong = ssmGateNormRef({ ...r, groups: 1 });
          assert.throws(() => assertClose(out, wrong, b.tol, b.eps, "planted"), /planted/);
        }
      });
    });
  }
}

Deno.test("ssm_gate_norm: a zero group stays 0 (eps keeps it finite); tiny inputs need eps", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const shape = { heads: 5, headDim: 7, groups: 5 };
    // y and x near 1e-3: v² is about 1e-7, so eps 1e-5 sets most of each group's scale.
    const r = makeInputs(shape, 4, 91, 1e-3);
    const y = Float64Array.from(r.y), x = Float64Array.from(r.x);
    y.fill(0, 35 + 14, 35 + 21); // token 1, group 2: v = 0
    x.fill(0, 35 + 14, 35 + 21);
    const zeroed = { ...r, y, x };
    const ref = ssmGateNormRef(zeroed);
    const b = bound(ref, 7);
    const out = await onGpu(device, zeroed, true);
    assertClose(out, ref, b.tol, b.eps, "gate_norm eps-dominated");
    assert.deepEqual(Array.from(out.subarray(49, 56), Math.abs), new Array(7).fill(0));
    // Planted error: eps left out of the reference must fail here.
    const noEps = ssmGateNormRef({ ...zeroed, y: r.y, x: r.x, eps: 0 });
    const out2 = await onGpu(device, r, true);
    assert.throws(() => assertClose(out2, noEps, b.tol, b.eps, "planted eps"), /planted eps/);
  });
});

Deno.test("ssm_gate_norm: wide groups: Granite-4.0-H-1B (inner 3072, one group), 8 groups of 384, one of 205", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const shape = { heads: 48, headDim: 64, groups: 1 };
    const r = makeInputs(shape, 3, 5, 1, 1e-6);
    const ref = ssmGateNormRef(r);
    const b = bound(ref, 3072);
    assertClose(await onGpu(device, r, false), ref, b.tol, b.eps, "gate_norm granite width");
    const r8 = makeInputs({ heads: 48, headDim: 64, groups: 8 }, 2, 6, 1, 1e-6);
    const ref8 = ssmGateNormRef(r8);
    const b8 = bound(ref8, 384);
    assertClose(await onGpu(device, r8, true), ref8, b8.tol, b8.eps, "gate_norm 8 groups of 384");
    // A group of 205: three full passes of 64 threads and a ragged one.
    const r5 = makeInputs({ heads: 5, headDim: 41, groups: 1 }, 3, 8);
    const ref5 = ssmGateNormRef(r5);
    const b5 = bound(ref5, 205);
    assertClose(await onGpu(device, r5, false), ref5, b5.tol, b5.eps, "gate_norm group of 205");
  });
});

Deno.test("ssm_gate_norm: bad arguments are refused, naming the argument", async () => {
  const { device } = await testGpu();
  const buf = (floats: number) => f32Buffer(device, "gate_norm:arg", new Float32Array(floats));
  const tokens = 4, inner = 36, width = 2 * inner + 3;
  const fused = buf(tokens * width);
  const good: SsmGateNormArgs = {
    y: { buffer: buf(tokens * inner), offset: 0, stride: inner },
    x: { buffer: fused, offset: 0, stride: width },
    z: { buffer: fused, offset: inner + 3, stride: width },
    d: buf(3),
    weight: buf(inner),
    out: buf(tokens * inner),
    tokens,
    heads: 3,
    headDim: 12,
    groups: 3,
    eps: 1e-6,
  };
  await prepareSsmGateNorm(device, good); // the base case is accepted
  const out = buf(tokens * width);
  const bad: [Partial<SsmGateNormArgs>, RegExp][] = [
    [{ groups: 5 }, /groups 5 do not divide inner 36/],
    [{ groups: 0 }, /groups must be an integer >= 1/],
    [{ headDim: 1.5 }, /headDim must be an integer >= 1/],
    [{ tokens: 0 }, /tokens must be an integer >= 1/],
    [{ eps: -1 }, /eps must be a finite number >= 0/],
    [{ eps: NaN }, /eps must be a finite number >= 0/],
    [{ heads: 1, headDim: 65537, groups: 1 }, /group width 65537 is over 65536/],
    [{ z: { buffer: fused, offset: inner + 4, stride: width } }, /z: offset 40 \+ width 36/],
    [{ x: { buffer: fused, offset: -1, stride: width } }, /x.offset must be an integer >= 0/],
    [{ x: { buffer: fused, offset: 0, stride: 0 } }, /x.stride must be an integer >= 1/],
    [{ y: { buffer: buf(tokens * inner - 1), offset: 0, stride: inner } }, /y.buffer holds/],
    [{ tokens: 5 }, /y.buffer holds/],
    [{ d: buf(2) }, /d holds/],
    [{ weight: buf(inner - 1) }, /weight holds/],
    [{ out: buf(tokens * inner - 1) }, /out holds/],
    [{ out, z: { buffer: out, offset: 0, stride: width } }, /out must not alias z/],
    [{ out, y: { buffer: out, offset: 0, stride: inner } }, /out must not alias y/],
  ];
  for (const [change, message] of bad) {
    await assert.rejects(
      () => prepareSsmGateNorm(device, { ...good, ...change }),
      (e: unknown) => e instanceof EngineError && message.test(e.message),
      `expected ${message}`,
    );
  }
});
