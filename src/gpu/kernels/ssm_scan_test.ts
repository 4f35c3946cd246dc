/**
 * The Mamba2 selective scan (`ssm_scan.wgsl`) against its float64 reference over odd shapes:
 * mixed runs (prefills and decodes, slots out of order, padding), a run at position 0 over a
 * slot of NaNs, chunked runs equal to one shot, a planted wrong group mapping, the longest run
 * lavapipe allows, and refused arguments.
 */
import assert from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { readF32 } from "../buffers.ts";
import { submitDispatches } from "../dispatch.ts";
import { type SsmRun, ssmScanRef } from "../../reference/kernels/ssm_scan.ts";
import { prepareSsmScan, type SsmScanArgs, ssmScanMaxRun } from "./ssm_scan.ts";
import { assertClose, rms, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import { asF32, f32Buffer, seeded, u32Buffer } from "../../../test/support/kernel_harness.ts";

interface Shape {
  heads: number;
  headDim: number;
  dState: number;
  groups: number;
  slotCount: number;
}

/** y's value for padding tokens, which the kernel must leave alone. */
const SENTINEL = 777;
const PAD_SLOT = 0xffffffff;
/** The bound's factor over f32's roundoff (see {@linkcode bound}). */
const C = 8;

/** A step's inputs in dense form, seeded; slots that position-0 runs use hold NaNs. */
function makeInputs(shape: Shape, tokens: number, runs: readonly SsmRun[], seed: number) {
  const { heads, headDim, dState, groups, slotCount } = shape;
  const state = asF32(seeded(seed + 7, slotCount * heads * headDim * dState, 2));
  const slotSize = heads * headDim * dState;
  for (const r of runs) {
    if (r.position === 0) state.fill(NaN, r.slot * slotSize, (r.slot + 1) * slotSize);
  }
  const dt = asF32(seeded(seed + 1, tokens * heads, 3));
  // Softplus past its threshold of 20 (dt itself) and far below it (nearly 0).
  dt[0] = 25;
  if (dt.length > heads + 1) dt[heads + 1] = -30;
  return {
    x: asF32(seeded(seed, tokens * heads * headDim)),
    dt,
    dtBias: asF32(seeded(seed + 2, heads)),
    // A = -exp(A_log): decays from slow to fast, so the carried state matters.
    a: asF32(Array.from(seeded(seed + 3, heads), (v) => -Math.exp(2 * v))),
    b: asF32(seeded(seed + 4, tokens * groups * dState)),
    c: asF32(seeded(seed + 5, tokens * groups * dState)),
    state,
  };
}

/** Per token: its slot and position from `runs` (tokens in no run are padding). */
function tokenTables(tokens: number, runs: readonly SsmRun[]) {
  const slots = new Array<number>(tokens).fill(PAD_SLOT);
  const positions = new Array<number>(tokens).fill(0);
  for (const r of runs) {
    for (let i = 0; i < r.count; i++) {
      slots[r.start + i] = r.slot;
      positions[r.start + i] = r.position + i;
    }
  }
  return { slots, positions };
}

/**
 * x, B, C (and dt unless `dtApart`) packed in one buffer of fused rows [3 pad | x | B | C | dt |
 * 2 pad]; with `dtApart` dt gets its own buffer with rows of heads + 1 at offset 1.
 */
function packRows(
  shape: Shape,
  tokens: number,
  inp: ReturnType<typeof makeInputs>,
  dtApart: boolean,
) {
  const { heads, headDim, dState, groups } = shape;
  const hd = heads * headDim, gd = groups * dState;
  const width = 3 + hd + 2 * gd + heads + 2;
  const rows = new Float64Array(tokens * width).fill(-5);
  const dtRows = new Float64Array(tokens * (heads + 1)).fill(-5);
  for (let t = 0; t < tokens; t++) {
    rows.set(inp.x.subarray(t * hd, (t + 1) * hd), t * width + 3);
    rows.set(inp.b.subarray(t * gd, (t + 1) * gd), t * width + 3 + hd);
    rows.set(inp.c.subarray(t * gd, (t + 1) * gd), t * width + 3 + hd + gd);
    const dt = inp.dt.subarray(t * heads, (t + 1) * heads);
    if (dtApart) dtRows.set(dt, t * (heads + 1) + 1);
    else rows.set(dt, t * width + 3 + hd + 2 * gd);
  }
  const at = (offset: number) => ({ offset, stride: width });
  return {
    rows,
    dtRows,
    x: at(3),
    b: at(3 + hd),
    c: at(3 + hd + gd),
    dt: dtApart ? { offset: 1, stride: heads + 1 } : at(3 + hd + 2 * gd),
  };
}

/** Run the kernel over `runs` on a given state buffer: y as the GPU leaves it. */
async function scanOnGpu(
  device: GPUDevice,
  shape: Shape,
  tokens: number,
  runs: readonly SsmRun[],
  inp: ReturnType<typeof makeInputs>,
  state: GPUBuffer,
  dtApart = false,
  segmentTokens?: number,
): Promise<Float32Array> {
  const packed = packRows(shape, tokens, inp, dtApart);
  const { slots, positions } = tokenTables(tokens, runs);
  const xbc = f32Buffer(device, "ssm:xbc", packed.rows);
  const y = f32Buffer(
    device,
    "ssm:y",
    new Array(tokens * shape.heads * shape.headDim).fill(SENTINEL),
  );
  const d = await prepareSsmScan(device, {
    ...shape,
    xbc,
    x: packed.x,
    b: packed.b,
    c: packed.c,
    dt: dtApart ? f32Buffer(device, "ssm:dt", packed.dtRows) : xbc,
    dtRows: packed.dt,
    a: f32Buffer(device, "ssm:a", inp.a),
    dtBias: f32Buffer(device, "ssm:dtBias", inp.dtBias),
    stateSlots: u32Buffer(device, "ssm:slots", slots),
    positions: u32Buffer(device, "ssm:positions", positions),
    state,
    y,
    tokens,
    ...(segmentTokens !== undefined ? { segmentTokens } : {}),
  });
  submitDispatches(device, d, "test");
  return await readF32(device, y, tokens * shape.heads * shape.headDim);
}

/** The reference for a case, with padding tokens' y at the sentinel. */
function reference(
  shape: Shape,
  tokens: number,
  runs: readonly SsmRun[],
  inp: ReturnType<typeof makeInputs>,
  groupOf?: (h: number) => number,
) {
  const ref = ssmScanRef({ ...shape, ...inp, runs, tokens, groupOf });
  const row = shape.heads * shape.headDim;
  const { slots } = tokenTables(tokens, runs);
  slots.forEach((s, t) => {
    if (s === PAD_SLOT) ref.y.fill(SENTINEL, t * row, (t + 1) * row);
  });
  return ref;
}

/**
 * Bound: each token's state update rounds a few times and y sums dState products, so the error
 * is a small multiple of u·√dState of the outputs' scale; measured errors (KILN_TOL_REPORT=1)
 * stay under a fifth of this (see the report lines).
 */
function bound(ref: Float64Array, dState: number) {
  const eps = C * 2 ** -24 * (Math.sqrt(dState) + 4);
  return { tol: eps * rms(ref.filter((v) => Number.isFinite(v) && v !== SENTINEL)), eps };
}

const MIXED: readonly SsmRun[] = [
  { slot: 3, start: 0, count: 5, position: 0 }, // prefill over a NaN slot
  { slot: 0, start: 5, count: 7, position: 4 }, // prefill continuing a sequence
  { slot: 4, start: 12, count: 1, position: 9 }, // decode
  { slot: 1, start: 14, count: 1, position: 2 }, // decode after one padding token
];

const CASES: { name: string; shape: Shape; dtApart: boolean }[] = [
  {
    name: "heads 6, groups 3, dState 16",
    shape: { heads: 6, headDim: 12, dState: 16, groups: 3, slotCount: 6 },
    dtApart: false,
  },
  {
    name: "heads 3, groups 1, dState 33",
    shape: { heads: 3, headDim: 12, dState: 33, groups: 1, slotCount: 5 },
    dtApart: true,
  },
  {
    name: "heads 6, groups 3, dState 33",
    shape: { heads: 6, headDim: 12, dState: 33, groups: 3, slotCount: 5 },
    dtApart: true,
  },
];

for (const { name, shape, dtApart } of CASES) {
  Deno.test(`ssm_scan: mixed runs, ${name}${dtApart ? ", dt apart" : ", dt in the row"}`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      const tokens = 15;
      const inp = makeInputs(shape, tokens, MIXED, 11 + shape.dState);
      const state = f32Buffer(device, "ssm:state", inp.state);
      const y = await scanOnGpu(device, shape, tokens, MIXED, inp, state, dtApart);
      const ref = reference(shape, tokens, MIXED, inp);
      const yb = bound(ref.y, shape.dState);
      assertClose(y, ref.y, yb.tol, yb.eps, `ssm y ${name}`);
      const s = await readF32(device, state, inp.state.length);
      const sb = bound(ref.state, 1);
      assertClose(s, ref.state, sb.tol, sb.eps, `ssm state ${name}`);
      // Untouched slots (2, and 5 where there is one) keep their bits.
      const size = shape.heads * shape.headDim * shape.dState;
      assert.deepEqual(
        s.subarray(2 * size, 3 * size),
        Float32Array.from(inp.state.subarray(2 * size, 3 * size)),
      );
      // Planted error: a wrong group mapping in the reference must fail the comparison.
      if (shape.groups > 1) {
        const wrong = reference(shape, tokens, MIXED, inp, (h) => h % shape.groups);
        assert.throws(() => assertClose(y, wrong.y, yb.tol, yb.eps, "planted"), /planted/);
      }
    });
  });
}

Deno.test("ssm_scan: chunks of 1, 3 and 7 tokens carry the state as one shot does", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const shape = { heads: 3, headDim: 12, dState: 33, groups: 1, slotCount: 2 };
    const whole: SsmRun[] = [{ slot: 1, start: 0, count: 11, position: 0 }];
    const inp = makeInputs(shape, 11, whole, 41);
    const oneState = f32Buffer(device, "ssm:state1", inp.state);
    const oneY = await scanOnGpu(device, shape, 11, whole, inp, oneState);
    const chunkState = f32Buffer(device, "ssm:stateN", inp.state);
    const parts: Float32Array[] = [];
    const row = shape.heads * shape.headDim, bc = shape.groups * shape.dState;
    for (const [start, count] of [[0, 1], [1, 3], [4, 7]] as const) {
      const part = {
        ...inp,
        x: inp.x.subarray(start * row, (start + count) * row),
        dt: inp.dt.subarray(start * shape.heads, (start + count) * shape.heads),
        b: inp.b.subarray(start * bc, (start + count) * bc),
        c: inp.c.subarray(start * bc, (start + count) * bc),
      };
      const runs = [{ slot: 1, start: 0, count, position: start }];
      parts.push(await scanOnGpu(device, shape, count, runs, part, chunkState));
    }
    const chunked = new Float32Array(11 * row);
    parts.reduce((at, p) => (chunked.set(p, at), at + p.length), 0);
    assert.deepEqual(chunked, oneY); // same f32 arithmetic in the same order
    const n = inp.state.length;
    assert.deepEqual(await readF32(device, chunkState, n), await readF32(device, oneState, n));
    // One step cut into dispatches of 1 and of 4 tokens walks the same arithmetic.
    for (const segmentTokens of [1, 4]) {
      const segState = f32Buffer(device, "ssm:stateS", inp.state);
      const segY = await scanOnGpu(device, shape, 11, whole, inp, segState, false, segmentTokens);
      assert.deepEqual(segY, oneY, `segments of ${segmentTokens}`);
      assert.deepEqual(await readF32(device, segState, n), await readF32(device, oneState, n));
    }
    const ref = reference(shape, 11, whole, inp);
    const yb = bound(ref.y, shape.dState);
    assertClose(oneY, ref.y, yb.tol, yb.eps, "ssm y one shot");
  });
});

Deno.test("ssm_scan: a run past one dispatch's walk at dState 128 is cut in two and matches", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const shape = { heads: 2, headDim: 1, dState: 128, groups: 1, slotCount: 1 };
    assert.equal(ssmScanMaxRun(128), 1904);
    const count = 2000;
    const runs = [{ slot: 0, start: 0, count, position: 3 }];
    const inp = makeInputs(shape, count, runs, 5);
    const state = f32Buffer(device, "ssm:state", inp.state);
    const y = await scanOnGpu(device, shape, count, runs, inp, state);
    const ref = reference(shape, count, runs, inp);
    const yb = bound(ref.y, shape.dState);
    assertClose(y, ref.y, yb.tol, yb.eps, "ssm y long run");
    const s = await readF32(device, state, inp.state.length);
    const sb = bound(ref.state, 1);
    assertClose(s, ref.state, sb.tol, sb.eps, "ssm state long run");
  });
});

Deno.test("ssm_scan: bad arguments are refused, naming the argument", async () => {
  const { device } = await testGpu();
  const shape = { heads: 6, headDim: 12, dState: 16, groups: 3, slotCount: 2 };
  const tokens = 4;
  const buf = (floats: number) => f32Buffer(device, "ssm:arg", new Float32Array(floats));
  const rowW = 6 * 12 + 2 * 3 * 16;
  const good: SsmScanArgs = {
    ...shape,
    xbc: buf(tokens * rowW),
    x: { offset: 0, stride: rowW },
    b: { offset: 72, stride: rowW },
    c: { offset: 120, stride: rowW },
    dt: buf(tokens * 6),
    dtRows: { offset: 0, stride: 6 },
    a: buf(6),
    dtBias: buf(6),
    stateSlots: buf(tokens),
    positions: buf(tokens),
    state: buf(2 * 6 * 12 * 16),
    y: buf(tokens * 72),
    tokens,
  };
  await prepareSsmScan(device, good); // the base case is accepted
  const bad: [Partial<SsmScanArgs>, RegExp][] = [
    [{ groups: 4 }, /groups 4 do not divide heads 6/],
    [{ dState: 129 }, /dState 129 is over 128/],
    [{ headDim: 0 }, /headDim must be an integer >= 1/],
    [{ segmentTokens: 0 }, /segmentTokens must be an integer >= 1/],
    [{ segmentTokens: 10828 }, /segmentTokens 10828 is over 10827 tokens for dState 16/],
    [{ c: { offset: 121, stride: rowW } }, /xbc holds/],
    [{ b: { offset: 72, stride: 40 } }, /b.stride 40 is under its row width 48/],
    [{ x: { offset: -1, stride: rowW } }, /x.offset must be an integer >= 0/],
    [{ dtRows: { offset: 1, stride: 6 } }, /dt holds/],
    [{ slotCount: 3 }, /state holds/],
    [{ y: buf(tokens * 72 - 1) }, /y holds/],
    [{ positions: buf(3) }, /positions holds/],
  ];
  for (const [change, message] of bad) {
    await assert.rejects(
      () => prepareSsmScan(device, { ...good, ...change }),
      (e: unknown) => e instanceof EngineError && message.test(e.message),
      `expected ${message}`,
    );
  }
});
