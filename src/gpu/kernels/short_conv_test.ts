/**
 * The causal short convolution (`short_conv.ts`) against its float64 reference
 * (`reference/kernels/short_conv.ts`) on odd shapes: mixed steps of prefill and decode runs in
 * slots out of order, runs from position 0 over garbage in their slot, chunked prefill against
 * one call, both modes, with and without bias, and refused arguments.
 */
import assert from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { readF32 } from "../buffers.ts";
import { submitDispatches } from "../dispatch.ts";
import { shortConvRef, type ShortConvRun } from "../../reference/kernels/short_conv.ts";
import { prepareShortConv, type ShortConvArgs } from "./short_conv.ts";
import {
  assertClose,
  assertSumsClose,
  F32_U,
  testGpu,
  withErrorScopes,
} from "../../../test/support/gpu.ts";
import {
  asF32,
  f32Buffer,
  outBuffer,
  seeded,
  u32Buffer,
} from "../../../test/support/kernel_harness.ts";

type Mode = "gated" | "silu";

/** Garbage in state rows that sit below position 0: a kernel that reads them fails loudly. */
const GARBAGE = 1e4;

/**
 * Outputs: each within `sumsTolerance(ref, width, C)`; the largest share of that bound measured
 * on lavapipe over these tests is recorded in the report (see `KILN_TOL_REPORT=1`).
 */
const OUT_C = 2;

/** Row layout of a mode: the row stride and where x, B and C start (padding around them). */
function layout(mode: Mode, channels: number) {
  return mode === "gated"
    ? { rowStride: 3 * channels + 2, bOffset: 1, cOffset: channels + 1, xOffset: 2 * channels + 2 }
    : { rowStride: channels + 5, xOffset: 3 };
}

/** A step's inputs: runs (in step order), rows, weights, bias and the old state. */
interface Step {
  mode: Mode;
  channels: number;
  width: number;
  slots: number;
  runs: ShortConvRun[];
  input: Float64Array;
  weight: Float64Array;
  bias?: Float64Array;
  state: Float64Array;
}

/** Runs laid one after another in the step, from [slot, position, count] triples. */
function runsOf(spec: readonly (readonly [number, number, number])[]): ShortConvRun[] {
  let start = 0;
  return spec.map(([slot, position, count]) => {
    const run = { slot, start, count, position };
    start += count;
    return run;
  });
}

const tokensOf = (runs: readonly ShortConvRun[]) => runs.reduce((n, r) => n + r.count, 0);

/** Seeded inputs for `runs`; state rows below each run's position 0 hold garbage. */
function makeStep(
  mode: Mode,
  channels: number,
  width: number,
  slots: number,
  runs: ShortConvRun[],
  seed: number,
  withBias: boolean,
): Step {
  const { rowStride } = layout(mode, channels);
  const state = asF32(seeded(seed + 3, slots * (width - 1) * channels));
  for (const run of runs) {
    for (let j = 0; j < width - 1; j++) {
      if (run.position - (width - 1) + j >= 0) continue;
      for (let c = 0; c < channels; c++) {
        state[(run.slot * (width - 1) + j) * channels + c] = GARBAGE * (1 + (c % 3));
      }
    }
  }
  return {
    mode,
    channels,
    width,
    slots,
    runs,
    input: asF32(seeded(seed, tokensOf(runs) * rowStride, 2)),
    weight: asF32(seeded(seed + 1, channels * width, 0.7)),
    ...(withBias ? { bias: asF32(seeded(seed + 2, channels, 0.5)) } : {}),
    state,
  };
}

/** Run the kernel over `s` with `state` as the state buffer: out [tokens, channels]. */
async function runGpu(device: GPUDevice, s: Step, state: GPUBuffer): Promise<Float32Array> {
  const tokens = tokensOf(s.runs);
  const outStride = s.channels + 2;
  const positions: number[] = [], slots: number[] = [];
  for (const r of s.runs) {
    for (let i = 0; i < r.count; i++) positions.push(r.position + i), slots.push(r.slot);
  }
  const out = outBuffer(device, "conv:out", tokens * outStride);
  const args: ShortConvArgs = {
    ...layout(s.mode, s.channels),
    input: f32Buffer(device, "conv:input", s.input),
    mode: s.mode,
    weight: f32Buffer(device, "conv:weight", s.weight),
    ...(s.bias ? { bias: f32Buffer(device, "conv:bias", s.bias) } : {}),
    state,
    positions: u32Buffer(device, "conv:positions", positions),
    stateSlots: u32Buffer(device, "conv:slots", slots),
    out,
    outStride,
    tokens,
    channels: s.channels,
    width: s.width,
    slots: s.slots,
  };
  submitDispatches(device, await prepareShortConv(device, args, "test_conv"), "test");
  const rows = await readF32(device, out, tokens * outStride);
  const got = new Float32Array(tokens * s.channels);
  for (let t = 0; t < tokens; t++) {
    got.set(rows.subarray(t * outStride, t * outStride + s.channels), t * s.channels);
  }
  return got;
}

/** The reference over `s` (its weights optionally replaced). */
function reference(s: Step, weight = s.weight) {
  return shortConvRef({
    ...layout(s.mode, s.channels),
    ...s,
    weight,
    tokens: tokensOf(s.runs),
  });
}

/** The new state's bound: u = B ⊙ x rounds once in f32 (gated); silu copies x exactly. */
const stateEps = (mode: Mode) => mode === "gated" ? 2 * F32_U : 0;

/** Two prefill runs (one from position 0 over garbage), decode runs, slots out of order. */
const MIXED = [[4, 0, 7], [1, 12, 1], [3, 5, 6], [0, 1, 1], [5, 2, 2]] as const;

const CASES: [Mode, number, number, boolean][] = [
  ["gated", 37, 3, false],
  ["silu", 129, 4, true],
  ["silu", 37, 4, false],
  ["gated", 129, 4, false],
  ["silu", 129, 3, true],
];

for (const [mode, channels, width, withBias] of CASES) {
  const name = `${mode}${withBias ? "+bias" : ""}, ${channels} channels, width ${width}`;
  Deno.test(`short_conv: mixed prefill/decode step, ${name}`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      const s = makeStep(mode, channels, width, 7, runsOf(MIXED), channels + width, withBias);
      const stateBuf = f32Buffer(device, "conv:state", s.state);
      const got = await runGpu(device, s, stateBuf);
      const want = reference(s);
      assertSumsClose(got, want.out, width, OUT_C, `out (${name})`);
      const newState = await readF32(device, stateBuf, s.state.length);
      assertClose(newState, want.state, 0, stateEps(mode), `state (${name})`);
      // Planted error: the taps reversed in the reference must fail the comparison.
      const reversed = s.weight.map((_, i) => s.weight[i - (i % width) + width - 1 - (i % width)]!);
      assert.throws(() =>
        assertSumsClose(got, reference(s, reversed).out, width, OUT_C, "planted")
      );
    });
  });
}

for (const [mode, channels, width, withBias] of CASES.slice(0, 2)) {
  const name = `chunked prefill (1, 2, 5 tokens) equals one call, ${mode} ${channels}x${width}`;
  Deno.test(`short_conv: ${name}`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      const slots = 3, slot = 2, total = 19;
      const whole = makeStep(mode, channels, width, slots, runsOf([[slot, 0, total]]), 7, withBias);
      const oneState = f32Buffer(device, "conv:state1", whole.state);
      const one = await runGpu(device, whole, oneState);
      const want = reference(whole);
      assertSumsClose(one, want.out, width, OUT_C, "one call");

      const { rowStride } = layout(mode, channels);
      const chunkState = f32Buffer(device, "conv:state2", whole.state);
      const chunked = new Float32Array(total * channels);
      let at = 0;
      for (const n of [1, 2, 5, 1, 2, 5, 3]) {
        const part: Step = {
          ...whole,
          runs: runsOf([[slot, at, n]]),
          input: whole.input.subarray(at * rowStride, (at + n) * rowStride),
        };
        chunked.set(await runGpu(device, part, chunkState), at * channels);
        at += n;
      }
      assert.equal(at, total);
      // Same sums in the same order, same f32 state: bit for bit.
      assert.deepEqual(chunked, one);
      const s1 = await readF32(device, oneState, whole.state.length);
      assert.deepEqual(await readF32(device, chunkState, whole.state.length), s1);
      assertClose(s1, want.state, 0, stateEps(mode), "state");
    });
  });
}

Deno.test("short_conv: one decode token deep into its sequence, gated 37x4", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const s = makeStep("gated", 37, 4, 2, runsOf([[1, 40, 1]]), 11, false);
    const stateBuf = f32Buffer(device, "conv:state", s.state);
    const want = reference(s);
    assertSumsClose(await runGpu(device, s, stateBuf), want.out, 4, OUT_C, "decode");
    assertClose(await readF32(device, stateBuf, s.state.length), want.state, 0, 2 * F32_U, "state");
  });
});

Deno.test("short_conv: refuses a width of 9 and an offset past the stride", async () => {
  const { device } = await testGpu();
  const s = makeStep("silu", 37, 3, 2, runsOf([[0, 0, 3]]), 5, false);
  const buf = (n: number) => outBuffer(device, "conv:any", n);
  const base: ShortConvArgs = {
    input: buf(3 * 42),
    rowStride: 42,
    xOffset: 3,
    mode: "silu",
    weight: buf(37 * 9),
    state: buf(2 * 8 * 37),
    positions: buf(3),
    stateSlots: buf(3),
    out: buf(3 * 37),
    outStride: 37,
    tokens: 3,
    channels: s.channels,
    width: 3,
    slots: 2,
  };
  const refused = (more: Partial<ShortConvArgs>, name: string) =>
    assert.rejects(
      () => prepareShortConv(device, { ...base, ...more }),
      (e) => e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(name),
    );
  await refused({ width: 9 }, "width");
  await refused({ xOffset: 6 }, "xOffset");
  await refused({ mode: "gated", bOffset: 0 }, "cOffset");
  await refused({ positions: buf(2) }, "positions");
  // The base arguments themselves pass (the checks above are not refusing everything).
  await withErrorScopes(device, () => prepareShortConv(device, base));
});
