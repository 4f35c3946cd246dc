/**
 * Gated attention's kernels (`query_gate.wgsl`) against their float64 references on odd shapes:
 * the query/gate split is a bit-exact copy (subnormals and -0 included), the sigmoid gate stays
 * within its bound over saturating gates, the two chained match the reference and fail against a
 * planted error (the gate taken from each head's query half), and bad arguments are refused.
 */
import assert from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { readU32 } from "../buffers.ts";
import { submitDispatches } from "../dispatch.ts";
import { querySplitRef, sigmoidGateRef } from "../../reference/kernels/query_gate.ts";
import { prepareQueryGateSplit, prepareSigmoidGate } from "./query_gate.ts";
import { assertClose, F32_U, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import {
  asF32,
  f32Buffer,
  outBuffer,
  runRead,
  seeded,
} from "../../../test/support/kernel_harness.ts";

/** [heads, kvHeads, headDim] */
const SHAPES = [[3, 1, 6], [5, 5, 10]] as const;
const TOKENS = [1, 7];
/** Out buffers' initial contents, all overwritten. */
const SENTINEL = 777;

/**
 * The sigmoid gate's bound `tol + |ref|·eps`: an output is attn·(1 / (1 + e^-g)), f32 exp (whose
 * relative error the WGSL spec bounds by 3 + 2|g| ulp) then three roundings (add, divide,
 * multiply); the relative error of 1 / (1 + e) is at most that of e. With |g| ≤ 8 here (larger
 * gates saturate: e^-g under f32 roundoff, or 1/(1+e) under e^-88 where the output is 0 or a
 * subnormal), eps = 32·u and tol = 1e-30 (for the subnormal outputs). On lavapipe the worst
 * element uses 21% of the bound (1.75e-7 at |ref| 1.98, about 6.7·u relative; `KILN_TOL_REPORT=1`),
 * so the bound is over 4.5x the measured error.
 */
const EPS = 32 * F32_U, TOL = 1e-30;

/** Seeded fused rows for a shape, with a subnormal and a -0 planted in the first row. */
function fusedRows(heads: number, kvHeads: number, headDim: number, tokens: number, seed: number) {
  const width = 2 * (heads + kvHeads) * headDim;
  const input = asF32(seeded(seed, tokens * width, 3));
  input[1] = 1e-40; // a query value, subnormal in f32
  input[headDim + 1] = -0; // a gate value
  return Float32Array.from(input);
}

for (const [heads, kvHeads, headDim] of SHAPES) {
  for (const tokens of TOKENS) {
    const name = `heads ${heads} kv ${kvHeads} head_dim ${headDim}, ${tokens} tokens`;
    Deno.test(`query/gate split is a bit-exact copy (${name})`, async () => {
      const { device } = await testGpu();
      await withErrorScopes(device, async () => {
        const input = fusedRows(heads, kvHeads, headDim, tokens, 11 + tokens);
        const q = heads * headDim, outWidth = q + 2 * kvHeads * headDim;
        const qkv = f32Buffer(device, "qg:qkv", new Array(tokens * outWidth).fill(SENTINEL));
        const gate = f32Buffer(device, "qg:gate", new Array(tokens * q).fill(SENTINEL));
        const d = await prepareQueryGateSplit(device, {
          input: f32Buffer(device, "qg:in", input),
          qkv,
          gate,
          tokens,
          heads,
          kvHeads,
          headDim,
        });
        submitDispatches(device, [d], "test");
        const want = querySplitRef(input, { tokens, heads, kvHeads, headDim });
        const bits = (v: ArrayLike<number>) =>
          Array.from(new Uint32Array(Float32Array.from(v).buffer));
        assert.deepEqual(Array.from(await readU32(device, qkv, tokens * outWidth)), bits(want.qkv));
        assert.deepEqual(Array.from(await readU32(device, gate, tokens * q)), bits(want.gate));
        // The reference itself must see the subnormal and the -0 where the layout puts them.
        assert.equal(want.qkv[1], Float32Array.of(1e-40)[0]);
        assert.ok(Object.is(want.gate[1], -0));
      });
    });

    Deno.test(`sigmoid gate in place (${name})`, async () => {
      const { device } = await testGpu();
      await withErrorScopes(device, async () => {
        const n = tokens * heads * headDim;
        const attn = asF32(seeded(21 + tokens, n, 2));
        const g = asF32(seeded(23 + tokens, n, 8));
        // Saturating gates: sigmoid 1, e^-100 (a subnormal product), 0 (e^100 overflows), 1/2.
        [30, -100, -1000, 0, 100].forEach((v, i) => i < n && (g[i] = v));
        const buf = f32Buffer(device, "sg:attn", attn);
        const d = await prepareSigmoidGate(device, {
          attn: buf,
          gate: f32Buffer(device, "sg:gate", g),
          tokens,
          width: heads * headDim,
        });
        const got = await runRead(device, [d], buf, n);
        assertClose(got, sigmoidGateRef(attn, g), TOL, EPS, `sigmoid gate ${name}`);
      });
    });
  }
}

Deno.test("split then sigmoid gate matches; the gate from the query half fails", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const [heads, kvHeads, headDim, tokens] = [3, 1, 6, 7];
    const q = heads * headDim, shape = { tokens, heads, kvHeads, headDim };
    const input = fusedRows(heads, kvHeads, headDim, tokens, 31);
    const qkv = outBuffer(device, "qg:qkv", tokens * (q + 2 * kvHeads * headDim));
    const gate = outBuffer(device, "qg:gate", tokens * q);
    const attn = asF32(seeded(33, tokens * q, 2));
    const attnBuf = f32Buffer(device, "qg:attn", attn);
    const split = await prepareQueryGateSplit(device, {
      input: f32Buffer(device, "in", input),
      qkv,
      gate,
      ...shape,
    });
    const sig = await prepareSigmoidGate(device, { attn: attnBuf, gate, tokens, width: q });
    const got = await runRead(device, [split, sig], attnBuf, tokens * q);
    assertClose(got, sigmoidGateRef(attn, querySplitRef(input, shape).gate), TOL, EPS, "chained");
    // Planted: each head's gate read from its query half (the offsets swapped).
    const swapped = new Float32Array(input.length);
    const width = input.length / tokens;
    for (let i = 0; i < input.length; i++) {
      const c = i % width;
      const inQ = c < 2 * q, j = c % (2 * headDim);
      swapped[i] = input[inQ ? i + (j < headDim ? headDim : -headDim) : i]!;
    }
    const wrong = sigmoidGateRef(attn, querySplitRef(swapped, shape).gate);
    assert.throws(() => assertClose(got, wrong, TOL, EPS, "planted"), /planted\[/);
  });
});

Deno.test("query gate kernels refuse bad arguments, naming them", async () => {
  const { device } = await testGpu();
  const buf = (floats: number) => outBuffer(device, "qg:arg", floats);
  const shape = { tokens: 2, heads: 3, kvHeads: 1, headDim: 6 };
  const good = { input: buf(2 * 48), qkv: buf(2 * 30), gate: buf(2 * 18), ...shape };
  const splitBad: [Partial<typeof good>, RegExp][] = [
    [{ tokens: 0 }, /tokens must be an integer >= 1/],
    [{ heads: 1.5 }, /heads must be an integer/],
    [{ kvHeads: 0 }, /kvHeads must be an integer/],
    [{ headDim: -1 }, /headDim must be an integer/],
    [{ input: buf(2 * 48 - 1) }, /input holds \d+ bytes, needs 384/],
    [{ qkv: buf(2 * 30 - 1) }, /qkv holds \d+ bytes, needs 240/],
    [{ gate: buf(2 * 18 - 1) }, /gate holds \d+ bytes, needs 144/],
    [{ qkv: good.input }, /qkv must not alias input/],
    [{ gate: good.input }, /gate must not alias input/],
    [{ gate: good.qkv }, /gate must not alias qkv/],
  ];
  for (const [change, message] of splitBad) {
    await assert.rejects(
      () => prepareQueryGateSplit(device, { ...good, ...change }),
      (e: unknown) => e instanceof EngineError && message.test(e.message),
      `expected ${message}`,
    );
  }
  const sg = { attn: buf(2 * 18), gate: buf(2 * 18), tokens: 2, width: 18 };
  const sigBad: [Partial<typeof sg>, RegExp][] = [
    [{ tokens: -2 }, /tokens must be an integer >= 1/],
    [{ width: 0 }, /width must be an integer >= 1/],
    [{ attn: buf(35) }, /attn holds \d+ bytes, needs 144/],
    [{ gate: buf(35) }, /gate holds \d+ bytes, needs 144/],
    [{ gate: sg.attn }, /gate must not alias attn/],
  ];
  for (const [change, message] of sigBad) {
    await assert.rejects(
      () => prepareSigmoidGate(device, { ...sg, ...change }),
      (e: unknown) => e instanceof EngineError && message.test(e.message),
      `expected ${message}`,
    );
  }
});
