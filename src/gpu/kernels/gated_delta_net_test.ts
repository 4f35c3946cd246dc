/**
 * The gated delta rule kernel (`gated_delta_net.wgsl`) against its float64 reference
 * (`reference/kernels/gated_delta_net.ts`): odd shapes, both head maps, mixed runs over slots out
 * of order, runs at position 0 over garbage, chunked steps and split dispatches equal to one shot,
 * g = 0 and beta = 0, a planted head-map error, and refused arguments.
 */
import { deepStrictEqual, rejects, throws } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { readF32 } from "../buffers.ts";
import { submitDispatches } from "../dispatch.ts";
import {
  type DeltaRefInputs,
  type DeltaRefShape,
  type DeltaRun,
  gatedDeltaNetRef,
} from "../../reference/kernels/gated_delta_net.ts";
import { type GatedDeltaNetArgs, prepareGatedDeltaNet } from "./gated_delta_net.ts";
import { assertClose, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import { asF32, f32Buffer, seeded, u32Buffer } from "../../../test/support/kernel_harness.ts";

/**
 * The bound, tol + |ref|·eps with both this. Outputs and states stay within a few units (unit
 * keys, beta < 1, decays <= 1, garbage states in [-1, 1)); the worst error measured on lavapipe
 * over this file is 1.8e-7 (a state of 1.5), 11% of its bound, a factor 9 below.
 */
const TOL = 1e-6;

/** Unused floats written around the output rows; they must survive. */
const SENTINEL = 7.5;

/** Seeded inputs for `tokens` tokens: unit q and k per head, g in (-1, 0], beta in (0, 1). */
function inputs(s: DeltaRefShape, tokens: number, seed: number): DeltaRefInputs {
  const unit = (x: Float64Array, dim: number) => {
    for (let r = 0; r < x.length / dim; r++) {
      let n = 0;
      for (let i = 0; i < dim; i++) n += x[r * dim + i]! ** 2;
      for (let i = 0; i < dim; i++) x[r * dim + i]! /= Math.sqrt(n);
    }
    return asF32(x);
  };
  const hv = tokens * s.vHeads;
  return {
    q: unit(seeded(seed, tokens * s.kHeads * s.kDim), s.kDim),
    k: unit(seeded(seed + 1, tokens * s.kHeads * s.kDim), s.kDim),
    v: asF32(seeded(seed + 2, hv * s.vDim, 1.5)),
    g: asF32(seeded(seed + 3, hv, 0.5).map((x) => x - 0.5)),
    beta: asF32(seeded(seed + 4, hv, 0.5).map((x) => x + 0.5)),
  };
}

/** Tokens [a, b) of `x`. */
function slice(s: DeltaRefShape, x: DeltaRefInputs, a: number, b: number): DeltaRefInputs {
  const part = (arr: ArrayLike<number>, w: number) => Array.from(arr).slice(a * w, b * w);
  const qk = s.kHeads * s.kDim;
  return {
    q: part(x.q, qk),
    k: part(x.k, qk),
    v: part(x.v, s.vHeads * s.vDim),
    g: part(x.g, s.vHeads),
    beta: part(x.beta, s.vHeads),
  };
}

/** Options of one GPU run. */
interface RunOpts {
  segmentTokens?: number;
}

/**
 * Run the kernel over `x` (one fused row per token: 3 pad | q | k | v | 2 pad, and g | beta | pad)
 * with the state buffer `state`; returns the outputs [tokens, vHeads, vDim].
 */
async function gpuStep(
  device: GPUDevice,
  s: DeltaRefShape,
  x: DeltaRefInputs,
  state: GPUBuffer,
  slots: number,
  pos: readonly number[],
  slotOf: readonly number[],
  opts: RunOpts = {},
): Promise<Float32Array> {
  const tokens = pos.length, qk = s.kHeads * s.kDim, vw = s.vHeads * s.vDim;
  const rs = 3 + 2 * qk + vw + 2, gs = 2 * s.vHeads + 1, os = vw + 5;
  const row = new Float32Array(tokens * rs), gb = new Float32Array(tokens * gs);
  for (let t = 0; t < tokens; t++) {
    for (let i = 0; i < qk; i++) row[t * rs + 3 + i] = x.q[t * qk + i]!;
    for (let i = 0; i < qk; i++) row[t * rs + 3 + qk + i] = x.k[t * qk + i]!;
    for (let i = 0; i < vw; i++) row[t * rs + 3 + 2 * qk + i] = x.v[t * vw + i]!;
    for (let h = 0; h < s.vHeads; h++) {
      gb[t * gs + h] = x.g[t * s.vHeads + h]!;
      gb[t * gs + s.vHeads + h] = x.beta[t * s.vHeads + h]!;
    }
  }
  const fused = f32Buffer(device, "gdn:qkv", row), gbuf = f32Buffer(device, "gdn:gb", gb);
  const out = f32Buffer(device, "gdn:out", new Float32Array(tokens * os).fill(SENTINEL));
  const args: GatedDeltaNetArgs = {
    q: { buffer: fused, stride: rs, offset: 3 },
    k: { buffer: fused, stride: rs, offset: 3 + qk },
    v: { buffer: fused, stride: rs, offset: 3 + 2 * qk },
    g: { buffer: gbuf, stride: gs, offset: 0 },
    beta: { buffer: gbuf, stride: gs, offset: s.vHeads },
    state,
    positions: u32Buffer(device, "gdn:pos", pos),
    stateSlots: u32Buffer(device, "gdn:slots", slotOf),
    out: { buffer: out, stride: os, offset: 2 },
    tokens,
    kHeads: s.kHeads,
    vHeads: s.vHeads,
    kDim: s.kDim,
    vDim: s.vDim,
    slots,
    headMap: s.headMap,
    ...opts,
  };
  submitDispatches(device, await prepareGatedDeltaNet(device, args), "gdn");
  const all = await readF32(device, out, tokens * os);
  const got = new Float32Array(tokens * vw);
  for (let t = 0; t < tokens; t++) {
    for (let e = 0; e < os; e++) {
      const v = all[t * os + e]!;
      if (e < 2 || e >= 2 + vw) {
        if (v !== SENTINEL) throw new Error(`out padding of token ${t} at ${e} overwritten: ${v}`);
      } else got[t * vw + e - 2] = v;
    }
  }
  return got;
}

/** Positions and slots per token of `runs`. */
function tokensOf(runs: readonly DeltaRun[]): { pos: number[]; slotOf: number[] } {
  const pos: number[] = [], slotOf: number[] = [];
  for (const r of runs) {
    for (let i = 0; i < r.count; i++) {
      pos[r.start + i] = r.position + i;
      slotOf[r.start + i] = r.slot;
    }
  }
  return { pos, slotOf };
}

/** Two prefills from 0 (over garbage), one continued prefill, two decodes; slots out of order. */
const MIXED: readonly DeltaRun[] = [
  { slot: 3, start: 0, count: 5, position: 0 },
  { slot: 0, start: 5, count: 1, position: 7 },
  { slot: 4, start: 6, count: 4, position: 3 },
  { slot: 2, start: 10, count: 1, position: 2 },
  { slot: 1, start: 11, count: 3, position: 0 },
];
const SLOTS = 6; // slot 5 is in no run: it must come back unchanged

const SHAPES: readonly DeltaRefShape[] = [
  { kHeads: 2, vHeads: 4, kDim: 12, vDim: 12, headMap: "tiled" },
  { kHeads: 2, vHeads: 6, kDim: 33, vDim: 33, headMap: "grouped" },
  { kHeads: 2, vHeads: 6, kDim: 33, vDim: 33, headMap: "tiled" },
  { kHeads: 2, vHeads: 4, kDim: 33, vDim: 12, headMap: "tiled" },
  { kHeads: 1, vHeads: 2, kDim: 128, vDim: 128, headMap: "grouped" },
];

const name = (s: DeltaRefShape) =>
  `H_k ${s.kHeads} H_v ${s.vHeads} S_k ${s.kDim} S_v ${s.vDim} ${s.headMap}`;

/** The mixed step of `s` on the GPU and in float64, with the state before and after. */
async function mixedCase(device: GPUDevice, s: DeltaRefShape, x: DeltaRefInputs) {
  const n = SLOTS * s.vHeads * s.vDim * s.kDim;
  const garbage = asF32(seeded(99, n));
  const state = f32Buffer(device, "gdn:state", garbage);
  const { pos, slotOf } = tokensOf(MIXED);
  const got = await gpuStep(device, s, x, state, SLOTS, pos, slotOf);
  const gotState = await readF32(device, state, n);
  return { got, gotState, garbage };
}

for (const s of SHAPES) {
  Deno.test(`gated delta net: mixed runs match float64 (${name(s)})`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      const x = inputs(s, 14, 10 + s.kDim);
      const { got, gotState, garbage } = await mixedCase(device, s, x);
      const ref = gatedDeltaNetRef(s, x, garbage, MIXED, 14);
      assertClose(got, ref.out, TOL, TOL, `out ${name(s)}`);
      assertClose(gotState, ref.state, TOL, TOL, `state ${name(s)}`);
    });
  });
}

Deno.test("gated delta net: a wrong head map in the reference fails (planted error)", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    for (const s of [SHAPES[0]!, SHAPES[1]!]) {
      const x = inputs(s, 14, 10 + s.kDim);
      const { got, garbage } = await mixedCase(device, s, x);
      const wrong = {
        ...s,
        headMap: s.headMap === "tiled" ? "grouped" as const : "tiled" as const,
      };
      const ref = gatedDeltaNetRef(wrong, x, garbage, MIXED, 14);
      throws(() => assertClose(got, ref.out, TOL, TOL, "planted"), /planted\[/);
    }
  });
});

/** Sequence A (slot 2, from position 0) and B (slot 0, from 5) of 11 tokens each, chunked by c. */
function chunkRuns(c: number, done: number): DeltaRun[] {
  const n = Math.min(c, 11 - done);
  return [
    { slot: 2, start: 0, count: n, position: done },
    { slot: 0, start: n, count: n, position: 5 + done },
  ];
}

Deno.test("gated delta net: chunked steps and split dispatches equal one shot", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const s = SHAPES[1]!, slots = 3, n = slots * s.vHeads * s.vDim * s.kDim;
    const garbage = asF32(seeded(7, n));
    const x = inputs(s, 22, 50);
    const whole = chunkRuns(11, 0);
    const { pos, slotOf } = tokensOf(whole);
    const oneState = f32Buffer(device, "gdn:state1", garbage);
    const one = await gpuStep(device, s, x, oneState, slots, pos, slotOf);
    const oneAfter = await readF32(device, oneState, n);
    const ref = gatedDeltaNetRef(s, x, garbage, whole, 22);
    assertClose(one, ref.out, TOL, TOL, "one-shot out");
    assertClose(oneAfter, ref.state, TOL, TOL, "one-shot state");
    for (const c of [1, 3, 7]) {
      const state = f32Buffer(device, `gdn:state${c}`, garbage);
      const got = new Float32Array(one.length), vw = s.vHeads * s.vDim;
      for (let done = 0; done < 11; done += c) {
        const runs = chunkRuns(c, done), m = runs[0]!.count;
        const xs = { ...slice(s, x, done, done + m) };
        const b = slice(s, x, 11 + done, 11 + done + m);
        for (const k of ["q", "k", "v", "g", "beta"] as const) {
          xs[k] = [...Array.from(xs[k]), ...Array.from(b[k])];
        }
        const t = tokensOf(runs);
        const part = await gpuStep(device, s, xs, state, slots, t.pos, t.slotOf);
        got.set(part.subarray(0, m * vw), done * vw);
        got.set(part.subarray(m * vw), (11 + done) * vw);
      }
      deepStrictEqual(got, one, `chunks of ${c}: outputs`);
      deepStrictEqual(await readF32(device, state, n), oneAfter, `chunks of ${c}: state`);
    }
    for (const seg of [1, 4, 5]) {
      const state = f32Buffer(device, `gdn:seg${seg}`, garbage);
      const got = await gpuStep(device, s, x, state, slots, pos, slotOf, { segmentTokens: seg });
      deepStrictEqual(got, one, `segments of ${seg}: outputs`);
      deepStrictEqual(await readF32(device, state, n), oneAfter, `segments of ${seg}: state`);
    }
  });
});

Deno.test("gated delta net: g = 0 and beta = 0", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const s = SHAPES[3]!;
    const base = inputs(s, 14, 70);
    const zeros = new Float64Array(14 * s.vHeads);
    const cases: [string, DeltaRefInputs][] = [
      ["g = 0", { ...base, g: zeros }],
      ["beta = 0", { ...base, beta: zeros }],
      ["g = beta = 0", { ...base, g: zeros, beta: zeros }],
    ];
    for (const [what, x] of cases) {
      const { got, gotState, garbage } = await mixedCase(device, s, x);
      const ref = gatedDeltaNetRef(s, x, garbage, MIXED, 14);
      assertClose(got, ref.out, TOL, TOL, `out ${what}`);
      assertClose(gotState, ref.state, TOL, TOL, `state ${what}`);
      if (what !== "g = beta = 0") continue;
      // Nothing decays and nothing is written: continued slots keep their bits, fresh ones are 0.
      const per = s.vHeads * s.vDim * s.kDim;
      for (const r of MIXED) {
        const slotState = gotState.subarray(r.slot * per, (r.slot + 1) * per);
        const want = r.position === 0 ? new Float32Array(per) : Float32Array.from(
          garbage.subarray(r.slot * per, (r.slot + 1) * per),
        );
        deepStrictEqual(slotState, want, `slot ${r.slot} with g = beta = 0`);
      }
    }
  });
});

// One thread walking 1000 tokens at S_k 128 alone would pass lavapipe's loop limit (it stops
// after 977): the wrapper splits the step into two dispatches (894 + 106 tokens).
Deno.test("gated delta net: a 1000-token run at S_k 128 (two dispatches) matches float64", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const s: DeltaRefShape = { kHeads: 1, vHeads: 1, kDim: 128, vDim: 8, headMap: "tiled" };
    const tokens = 1000, n = s.vDim * s.kDim;
    const garbage = asF32(seeded(5, n));
    const x = inputs(s, tokens, 90);
    const runs: DeltaRun[] = [{ slot: 0, start: 0, count: tokens, position: 3 }];
    const { pos, slotOf } = tokensOf(runs);
    const state = f32Buffer(device, "gdn:long", garbage);
    const got = await gpuStep(device, s, x, state, 1, pos, slotOf);
    const ref = gatedDeltaNetRef(s, x, garbage, runs, tokens);
    assertClose(got, ref.out, TOL, TOL, "long out");
    assertClose(await readF32(device, state, n), ref.state, TOL, TOL, "long state");
  });
});

Deno.test("gated delta net: bad arguments are refused, naming the argument", async () => {
  const { device } = await testGpu();
  const buf = (floats: number) => f32Buffer(device, "gdn:bad", new Float32Array(floats));
  const strided = (floats: number, stride: number, offset = 0) => ({
    buffer: buf(floats),
    stride,
    offset,
  });
  const ok: GatedDeltaNetArgs = {
    q: strided(3 * 24, 24),
    k: strided(3 * 24, 24),
    v: strided(3 * 48, 48),
    g: strided(3 * 4, 4),
    beta: strided(3 * 4, 4),
    state: buf(2 * 4 * 12 * 12),
    positions: buf(3),
    stateSlots: buf(3),
    out: strided(3 * 48, 48),
    tokens: 3,
    kHeads: 2,
    vHeads: 4,
    kDim: 12,
    vDim: 12,
    slots: 2,
  };
  const refused = (what: string) => (e: unknown) =>
    e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(what);
  const bad: [Partial<GatedDeltaNetArgs> | Record<string, unknown>, string][] = [
    [{ tokens: 0 }, "tokens"],
    [{ kDim: 129, vDim: 12 }, "kDim must be <= 128"],
    [{ vDim: 200 }, "vDim must be <= 128"],
    [{ vHeads: 5 }, "vHeads (5) must be a multiple of kHeads (2)"],
    [{ slots: 1.5 }, "slots"],
    [{ headMap: "interleaved" }, "headMap"],
    [{ segmentTokens: 0 }, "segmentTokens"],
    [{ segmentTokens: 6667 }, "segmentTokens must be <= 6666"],
    [{ q: strided(3 * 24, 24, 1) }, "q: offset 1 + width 24 exceeds stride 24"],
    [{ v: strided(2 * 48, 48) }, "v.buffer holds"],
    [{ beta: strided(12, 4, -1) }, "beta.offset"],
    [{ out: strided(3 * 48, 0) }, "out.stride"],
    [{ state: buf(4 * 12 * 12) }, "state holds"],
    [{ positions: buf(2) }, "positions holds"],
    [{ stateSlots: buf(2) }, "stateSlots holds"],
  ];
  await prepareGatedDeltaNet(device, ok); // the base arguments are accepted
  for (const [change, what] of bad) {
    await rejects(
      prepareGatedDeltaNet(device, { ...ok, ...change } as GatedDeltaNetArgs),
      refused(what),
    );
  }
});
