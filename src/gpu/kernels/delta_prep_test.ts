/**
 * Qwen3.5's delta-rule preparation and gated output norm (`delta_prep.wgsl`) against their float64
 * references over odd shapes (kHeads 2, vHeads 6, kDim 12 and 33, 1 and 5 tokens), inputs read
 * from fused rows, the q and k norms checked in place (the rest of the row left as it was), heads
 * where eps decides the scale, saturated gates, planted errors (ggml_l2_norm's max(|x|, eps)
 * form, the gate applied before the norm) and refused arguments.
 */
import assert from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { readF32 } from "../buffers.ts";
import { submitDispatches } from "../dispatch.ts";
import {
  deltaPrepRef,
  type DeltaPrepRefArgs,
  normGateRef,
  type NormGateRefArgs,
} from "../../reference/kernels/delta_prep.ts";
import { prepareDeltaPrep, prepareNormGate } from "./delta_prep.ts";
import { assertClose, F32_U, rms, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import { asF32, f32Buffer, seeded } from "../../../test/support/kernel_harness.ts";

/** Padding and untouched parts of the fused rows; must come back bit for bit. */
const PAD = -9;
/** Value head dim of the v part of the conv row (never read by the kernel). */
const V_DIM = 5;
/** The model's RMS eps (Qwen3.5: 1e-6). */
const EPS = 1e-6;
/**
 * Factor of the bounds over f32 roundoff, `tol + |ref|·eps` with eps = C·u·(√width + 4) and
 * tol = eps·rms(ref) for the norms, eps = C·u·8 and tol = eps·rms(ref) for beta and g (exp, log,
 * a product), tol = eps for beta and eps·max|a| for g. Measured on lavapipe (`KILN_TOL_REPORT=1`):
 * the worst element uses 10.4% of its bound (norm_gate, headDim 33, 1.4e-6 at |ref| up to 50;
 * q, k 7.3%, beta 3.0%, g 6.8%), so the bounds are over 9x the measured error.
 */
const C = 3;

function normBound(ref: Float64Array, width: number) {
  const eps = C * F32_U * (Math.sqrt(width) + 4);
  return { tol: eps * rms(ref), eps };
}

/** beta: tol = eps (|beta| <= 1); g: tol = eps·max|a| (softplus near 0 scaled by a). */
function gateBound(scale: number) {
  const eps = C * F32_U * 8;
  return { tol: eps * scale, eps };
}

/** Seeded prep inputs: q head 1 of token 0 tiny (eps decides its scale), k head 0 of token 0 zero. */
function prepInputs(kDim: number, tokens: number, seed: number): DeltaPrepRefArgs {
  const kHeads = 2, vHeads = 6, qk = kHeads * kDim;
  const q = asF32(seeded(seed, tokens * qk, 2)), k = asF32(seeded(seed + 1, tokens * qk, 2));
  for (let e = kDim; e < 2 * kDim; e++) q[e] = q[e]! * 1e-4;
  k.fill(0, 0, kDim);
  const b = asF32(seeded(seed + 2, tokens * vHeads, 6)),
    alpha = asF32(seeded(seed + 3, tokens * vHeads, 6));
  b[0] = 100, b[1] = -100, alpha[0] = 30, alpha[1] = -40, alpha[2] = 19.5;
  return {
    q,
    k,
    b,
    alpha,
    dtBias: asF32(seeded(seed + 4, vHeads, 2)),
    a: asF32(Array.from(seeded(seed + 5, vHeads), (v) => -Math.exp(v))),
    tokens,
    kHeads,
    kDim,
    vHeads,
    eps: EPS,
  };
}

/**
 * Run the prep with conv rows [3 pad | q | k | v | 2 pad] and ab rows [1 pad | b | alpha | 2 pad];
 * the whole conv buffer read back, and beta and g.
 */
async function prepOnGpu(device: GPUDevice, r: DeltaPrepRefArgs) {
  const qk = r.kHeads * r.kDim, convW = 3 + 2 * qk + r.vHeads * V_DIM + 2, abW = 3 + 2 * r.vHeads;
  const conv = new Float64Array(r.tokens * convW).fill(PAD);
  const ab = new Float64Array(r.tokens * abW).fill(PAD);
  const v = asF32(seeded(99, r.tokens * r.vHeads * V_DIM));
  const rows = (x: ArrayLike<number>, t: number, w: number) =>
    Array.from(x).slice(t * w, (t + 1) * w);
  for (let t = 0; t < r.tokens; t++) {
    conv.set(rows(r.q, t, qk), t * convW + 3);
    conv.set(rows(r.k, t, qk), t * convW + 3 + qk);
    conv.set(rows(v, t, r.vHeads * V_DIM), t * convW + 3 + 2 * qk);
    ab.set(rows(r.b, t, r.vHeads), t * abW + 1);
    ab.set(rows(r.alpha, t, r.vHeads), t * abW + 1 + r.vHeads);
  }
  const n = r.tokens * r.vHeads;
  const convBuf = f32Buffer(device, "prep:conv", conv);
  const beta = f32Buffer(device, "prep:beta", new Array(n).fill(777));
  const g = f32Buffer(device, "prep:g", new Array(n).fill(777));
  const d = await prepareDeltaPrep(device, {
    ...r,
    conv: { buffer: convBuf, offset: 3, stride: convW },
    ab: { buffer: f32Buffer(device, "prep:ab", ab), offset: 1, stride: abW },
    dtBias: f32Buffer(device, "prep:dt", r.dtBias),
    a: f32Buffer(device, "prep:a", r.a),
    beta,
    g,
  });
  submitDispatches(device, [d], "test");
  const convOut = await readF32(device, convBuf, r.tokens * convW);
  const q = new Float64Array(r.tokens * qk), k = new Float64Array(r.tokens * qk);
  const rest = Float64Array.from(convOut);
  for (let t = 0; t < r.tokens; t++) {
    q.set(convOut.subarray(t * convW + 3, t * convW + 3 + qk), t * qk);
    k.set(convOut.subarray(t * convW + 3 + qk, t * convW + 3 + 2 * qk), t * qk);
    rest.fill(0, t * convW + 3, t * convW + 3 + 2 * qk);
    conv.fill(0, t * convW + 3, t * convW + 3 + 2 * qk);
  }
  // What the kernel must leave alone: pads and v as uploaded (f32-exact), q and k zeroed here.
  assert.deepEqual(Array.from(rest), Array.from(asF32(conv)), "conv outside q and k changed");
  return { q, k, beta: await readF32(device, beta, n), g: await readF32(device, g, n) };
}

/** ggml_l2_norm's form, x / max(|x|, eps): Qwen3.5 does not use it (planted error). */
function maxFormNorm(x: ArrayLike<number>, dim: number, eps: number): Float64Array {
  const out = Float64Array.from(x);
  for (let first = 0; first < out.length; first += dim) {
    let sum = 0;
    for (let e = 0; e < dim; e++) sum += out[first + e]! ** 2;
    const scale = 1 / Math.max(Math.sqrt(sum), eps);
    for (let e = 0; e < dim; e++) out[first + e] = out[first + e]! * scale;
  }
  return out;
}

for (const kDim of [12, 33]) {
  for (const tokens of [1, 5]) {
    const name = `kHeads 2, vHeads 6, kDim ${kDim}, ${tokens} token${tokens > 1 ? "s" : ""}`;
    Deno.test(`delta_prep: ${name}: q, k normed in place, beta, g`, async () => {
      const { device } = await testGpu();
      await withErrorScopes(device, async () => {
        const r = prepInputs(kDim, tokens, 31 * kDim + tokens);
        const ref = deltaPrepRef(r);
        const out = await prepOnGpu(device, r);
        for (const n of ["q", "k"] as const) {
          const b = normBound(ref[n], kDim);
          assertClose(out[n], ref[n], b.tol, b.eps, `prep ${n} ${name}`);
        }
        assert.deepEqual(Array.from(out.k.subarray(0, kDim), Math.abs), new Array(kDim).fill(0));
        const aMax = Math.max(...Array.from(r.a, Math.abs));
        for (const [n, scale] of [["beta", 1], ["g", aMax]] as const) {
          const b = gateBound(scale);
          assertClose(out[n], ref[n], b.tol, b.eps, `prep ${n} ${name}`);
        }
        // Planted error: dtBias left out of g.
        const noBias = deltaPrepRef({ ...r, dtBias: new Array(r.vHeads).fill(0) }).g;
        const bg = gateBound(aMax);
        assert.throws(() => assertClose(out.g, noBias, bg.tol, bg.eps, "planted dt"), /planted dt/);
        // Planted error: ggml_l2_norm's x / max(|x|, eps) differs on the tiny q head.
        const wrong = maxFormNorm(r.q, kDim, EPS);
        const b = normBound(ref.q, kDim);
        assert.throws(() => assertClose(out.q, wrong, b.tol, b.eps, "planted max"), /planted max/);
        // Planted error: eps left out.
        const noEps = deltaPrepRef({ ...r, eps: 0 }).q;
        assert.throws(() => assertClose(out.q, noEps, b.tol, b.eps, "planted eps"), /planted eps/);
      });
    });
  }
}

function gateInputs(headDim: number, tokens: number, seed: number): NormGateRefArgs {
  const heads = 6, n = tokens * heads * headDim;
  const z = asF32(seeded(seed + 1, n, 4));
  z[0] = 30, z[1] = -100;
  const o = asF32(seeded(seed, n, 0.5));
  // Token 0, head 1: o tiny, so eps sets most of its scale.
  for (let j = headDim; j < 2 * headDim; j++) o[j] = o[j]! * 1e-4;
  const weight = asF32(Array.from(seeded(seed + 2, headDim), (v) => 1 + 0.5 * v));
  return { o, z, weight, tokens, heads, headDim, eps: EPS };
}

/** Run the norm gate with rows [2 pad | z | 1 pad | o | 3 pad] of one buffer. */
async function gateOnGpu(device: GPUDevice, r: NormGateRefArgs) {
  const width = r.heads * r.headDim, rowW = 6 + 2 * width;
  const fused = new Float64Array(r.tokens * rowW).fill(PAD);
  for (let t = 0; t < r.tokens; t++) {
    fused.set(Array.from(r.z).slice(t * width, (t + 1) * width), t * rowW + 2);
    fused.set(Array.from(r.o).slice(t * width, (t + 1) * width), t * rowW + 3 + width);
  }
  const buf = f32Buffer(device, "norm_gate:fused", fused);
  const out = f32Buffer(device, "norm_gate:out", new Array(r.tokens * width).fill(777));
  const d = await prepareNormGate(device, {
    ...r,
    o: { buffer: buf, offset: 3 + width, stride: rowW },
    z: { buffer: buf, offset: 2, stride: rowW },
    weight: f32Buffer(device, "norm_gate:w", r.weight),
    out,
  });
  submitDispatches(device, [d], "test");
  return await readF32(device, out, r.tokens * width);
}

/** The gate before the norm: RMSNorm(o·silu(z))·weight (planted error). */
function gateFirst(r: NormGateRefArgs): Float64Array {
  const gated = Array.from(r.o, (v, i) => v * r.z[i]! / (1 + Math.exp(-r.z[i]!)));
  const out = new Float64Array(gated.length);
  for (let first = 0; first < out.length; first += r.headDim) {
    let sum = 0;
    for (let j = 0; j < r.headDim; j++) sum += gated[first + j]! ** 2;
    const scale = 1 / Math.sqrt(sum / r.headDim + r.eps);
    for (let j = 0; j < r.headDim; j++) out[first + j] = gated[first + j]! * scale * r.weight[j]!;
  }
  return out;
}

for (const headDim of [12, 33, 150]) {
  for (const tokens of [1, 5]) {
    const name = `heads 6, headDim ${headDim}, ${tokens} token${tokens > 1 ? "s" : ""}`;
    Deno.test(`delta_prep: norm_gate ${name}`, async () => {
      const { device } = await testGpu();
      await withErrorScopes(device, async () => {
        const r = gateInputs(headDim, tokens, 7 * headDim + tokens);
        const ref = normGateRef(r);
        const b = normBound(ref, headDim);
        const out = await gateOnGpu(device, r);
        assertClose(out, ref, b.tol, b.eps, `norm_gate ${name}`);
        const wrong = gateFirst(r);
        assert.throws(
          () => assertClose(out, wrong, b.tol, b.eps, "planted order"),
          /planted order/,
        );
        const noEps = normGateRef({ ...r, eps: 0 });
        assert.throws(() => assertClose(out, noEps, b.tol, b.eps, "planted eps"), /planted eps/);
      });
    });
  }
}

Deno.test("delta_prep: bad arguments are refused, naming the argument", async () => {
  const { device } = await testGpu();
  const buf = (floats: number) => f32Buffer(device, "prep:arg", new Float32Array(floats));
  const tokens = 3, convW = 2 * 2 * 12 + 30, abW = 12;
  const conv = buf(tokens * convW), ab = buf(tokens * abW);
  const good = {
    conv: { buffer: conv, offset: 0, stride: convW },
    ab: { buffer: ab, offset: 0, stride: abW },
    dtBias: buf(6),
    a: buf(6),
    beta: buf(tokens * 6),
    g: buf(tokens * 6),
    tokens,
    kHeads: 2,
    kDim: 12,
    vHeads: 6,
    eps: 1e-6,
  };
  await prepareDeltaPrep(device, good); // the base case is accepted
  const bad: [Partial<typeof good>, RegExp][] = [
    [{ tokens: 0 }, /tokens must be an integer >= 1/],
    [{ kHeads: 1.5 }, /kHeads must be an integer >= 1/],
    [{ kDim: 0 }, /kDim must be an integer >= 1/],
    [{ vHeads: -1 }, /vHeads must be an integer >= 1/],
    [{ kHeads: 1, kDim: 65537 }, /kDim must be <= 65536/],
    [{ eps: -1 }, /eps must be a finite number >= 0/],
    [{ eps: Infinity }, /eps must be a finite number >= 0/],
    [{ conv: { buffer: conv, offset: convW - 47, stride: convW } }, /conv: offset 31 \+ width 48/],
    [{ conv: { buffer: conv, offset: -1, stride: convW } }, /conv.offset must be an integer >= 0/],
    [{ ab: { buffer: ab, offset: 1, stride: abW } }, /ab: offset 1 \+ width 12 exceeds stride 12/],
    [{ ab: { buffer: ab, offset: 0, stride: 0 } }, /ab.stride must be an integer >= 1/],
    [{ tokens: 4 }, /conv.buffer holds/],
    [{ dtBias: buf(5) }, /dtBias holds/],
    [{ a: buf(5) }, /a holds/],
    [{ beta: buf(tokens * 6 - 1) }, /beta holds/],
    [{ g: buf(tokens * 6 - 1) }, /g holds/],
    [{ ab: { buffer: conv, offset: 0, stride: convW } }, /conv must not alias ab/],
    [{ g: good.beta }, /beta must not alias g/],
    [{ a: good.g }, /g must not alias a/],
  ];
  for (const [change, message] of bad) {
    await assert.rejects(
      () => prepareDeltaPrep(device, { ...good, ...change }),
      (e: unknown) => e instanceof EngineError && message.test(e.message),
      `expected ${message}`,
    );
  }
  const fused = buf(tokens * 2 * 72 + 8), out = buf(tokens * 72);
  const gate = {
    o: { buffer: fused, offset: 72, stride: 144 },
    z: { buffer: fused, offset: 0, stride: 144 },
    weight: buf(12),
    out,
    tokens,
    heads: 6,
    headDim: 12,
    eps: 1e-6,
  };
  await prepareNormGate(device, gate); // the base case is accepted
  const badGate: [Partial<typeof gate>, RegExp][] = [
    [{ heads: 0 }, /heads must be an integer >= 1/],
    [{ headDim: 2.5 }, /headDim must be an integer >= 1/],
    [{ heads: 1, headDim: 65537 }, /headDim must be <= 65536/],
    [{ eps: NaN }, /eps must be a finite number >= 0/],
    [
      { o: { buffer: fused, offset: 73, stride: 144 } },
      /o: offset 73 \+ width 72 exceeds stride 144/,
    ],
    [{ z: { buffer: buf(tokens * 144 - 73), offset: 0, stride: 144 } }, /z.buffer holds/],
    [{ weight: buf(11) }, /weight holds/],
    [{ out: buf(tokens * 72 - 1) }, /out holds/],
    [{ o: { buffer: out, offset: 0, stride: 72 } }, /out must not alias o/],
    [{ z: { buffer: out, offset: 0, stride: 72 } }, /out must not alias z/],
    [{ weight: out }, /out must not alias weight/],
  ];
  for (const [change, message] of badGate) {
    await assert.rejects(
      () => prepareNormGate(device, { ...gate, ...change }),
      (e: unknown) => e instanceof EngineError && message.test(e.message),
      `expected ${message}`,
    );
  }
});
