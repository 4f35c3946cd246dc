/**
 * Wrapper for `shaders/ssm_scan.wgsl`: the Mamba2 selective scan in its recurrent form, over a
 * step's runs (a sequence's contiguous tokens with consecutive positions and one state slot).
 * The arithmetic is ggml's SSM_SCAN with a scalar A per head, with the dt bias added in the
 * kernel; the D skip, the gate and the grouped RMSNorm are the layer's later steps.
 */
import {
  checkBuffer,
  checkCount,
  fail,
  grid256,
  type KernelDispatch,
  prepareKernel,
} from "./kernel.ts";

/** The largest state width the kernel holds in private memory. */
export const SSM_MAX_STATE = 128;

/**
 * Loop iterations one invocation may spend: lavapipe ends an invocation's loops after 65535
 * iterations in all; this leaves a margin under it.
 */
const ITERATION_BUDGET = 65_000;

/**
 * The longest run (tokens) one dispatch walks for a state width of `dState`. Lavapipe counts a
 * loop's final, exiting test as an iteration too (measured: a run at dState 128 was cut after
 * 1923 tokens, = (65535 - 129) / 34): an invocation spends dState + 1 iterations loading its
 * state row, as many storing it, and ceil(dState / 4) + 2 a token. At dState 128 this is 1904
 * tokens (lavapipe's own limit there is 1919); `prepareSsmScan` cuts longer steps into dispatches
 * of at most this.
 */
export function ssmScanMaxRun(dState: number): number {
  return Math.floor((ITERATION_BUDGET - 2 * (dState + 1)) / (Math.ceil(dState / 4) + 2));
}

/** Where one input's rows lie in its buffer, in f32 elements. */
export interface SsmRows {
  /** Element of token 0's first value. */
  offset: number;
  /** Elements from one token's row to the next. */
  stride: number;
}

/** Buffers and shape of {@linkcode prepareSsmScan}. */
export interface SsmScanArgs {
  /** f32 rows holding x, B and C (the conv output [x | B | C]), each placed by its `SsmRows`. */
  xbc: GPUBuffer;
  /** x [tokens, heads, headDim] within `xbc`. */
  x: SsmRows;
  /** B [tokens, groups, dState] within `xbc`. */
  b: SsmRows;
  /** C [tokens, groups, dState] within `xbc`. */
  c: SsmRows;
  /** f32 raw dt [tokens, heads] (before bias and softplus), placed by `dtRows`; may be `xbc`. */
  dt: GPUBuffer;
  /** dt's rows within `dt`. */
  dtRows: SsmRows;
  /** f32 [heads]: A per head (negative: the model's -exp(A_log)). */
  a: GPUBuffer;
  /** f32 [heads]: added to dt before softplus. */
  dtBias: GPUBuffer;
  /**
   * u32 per token: its sequence's state slot; `>= slotCount` marks padding (y left as is). A
   * slot serves at most one run a step (two runs of one slot would race on its state).
   */
  stateSlots: GPUBuffer;
  /** u32 per token: its position (a run at position 0 starts from zeros, not the slot). */
  positions: GPUBuffer;
  /** f32 [slotCount, heads, headDim, dState], read at run starts and written at run ends. */
  state: GPUBuffer;
  /** Out: f32 [tokens, heads, headDim]. */
  y: GPUBuffer;
  /** Tokens in the step. */
  tokens: number;
  /** SSM heads. */
  heads: number;
  /** Channels per head. */
  headDim: number;
  /** State width (at most {@linkcode SSM_MAX_STATE}). */
  dState: number;
  /** B/C groups (divides `heads`; head h reads group h / (heads / groups)). */
  groups: number;
  /** State slots `state` holds. */
  slotCount: number;
  /**
   * Most tokens one dispatch walks (default, and at most, {@linkcode ssmScanMaxRun} of
   * `dState`): a longer step is cut into dispatches, a run cut between two resuming from its slot.
   */
  segmentTokens?: number;
}

/** Refuse shapes the kernel cannot take. */
function checkShape(what: string, a: SsmScanArgs): void {
  for (const name of ["tokens", "heads", "headDim", "dState", "groups", "slotCount"] as const) {
    checkCount(what, name, a[name], 1);
  }
  if (a.dState > SSM_MAX_STATE) fail(what, `dState ${a.dState} is over ${SSM_MAX_STATE}`);
  if (a.heads % a.groups !== 0) fail(what, `groups ${a.groups} do not divide heads ${a.heads}`);
  if (a.segmentTokens !== undefined) {
    checkCount(what, "segmentTokens", a.segmentTokens, 1);
    const max = ssmScanMaxRun(a.dState);
    if (a.segmentTokens > max) {
      fail(what, `segmentTokens ${a.segmentTokens} is over ${max} tokens for dState ${a.dState}`);
    }
  }
}

/** Refuse rows of `width` elements placed badly; the elements the rows need. */
function rowsEnd(what: string, name: string, r: SsmRows, width: number, tokens: number): number {
  checkCount(what, `${name}.offset`, r.offset, 0);
  checkCount(what, `${name}.stride`, r.stride, 0);
  if (tokens > 1 && r.stride < width) {
    fail(what, `${name}.stride ${r.stride} is under its row width ${width}`);
  }
  return r.offset + (tokens - 1) * r.stride + width;
}

/** Refuse buffers too small for the shape. */
function checkBuffers(device: GPUDevice, what: string, a: SsmScanArgs): void {
  const t = a.tokens;
  const xbcEnd = Math.max(
    rowsEnd(what, "x", a.x, a.heads * a.headDim, t),
    rowsEnd(what, "b", a.b, a.groups * a.dState, t),
    rowsEnd(what, "c", a.c, a.groups * a.dState, t),
  );
  checkBuffer(device, what, "xbc", a.xbc, 4 * xbcEnd);
  checkBuffer(device, what, "dt", a.dt, 4 * rowsEnd(what, "dtRows", a.dtRows, a.heads, t));
  checkBuffer(device, what, "a", a.a, 4 * a.heads);
  checkBuffer(device, what, "dtBias", a.dtBias, 4 * a.heads);
  checkBuffer(device, what, "stateSlots", a.stateSlots, 4 * t);
  checkBuffer(device, what, "positions", a.positions, 4 * t);
  const row = a.heads * a.headDim;
  checkBuffer(device, what, "state", a.state, 4 * a.slotCount * row * a.dState);
  checkBuffer(device, what, "y", a.y, 4 * t * row);
}

/**
 * The selective scan over a step's runs: y for every non-padding token and each run's final
 * state in its slot (see `shaders/ssm_scan.wgsl` for the arithmetic and the batch model). One
 * dispatch per `segmentTokens` tokens, to be recorded in order.
 */
export async function prepareSsmScan(
  device: GPUDevice,
  a: SsmScanArgs,
  label = "ssm_scan",
): Promise<KernelDispatch[]> {
  checkShape(label, a);
  checkBuffers(device, label, a);
  const seg = a.segmentTokens ?? ssmScanMaxRun(a.dState);
  const parts: Promise<KernelDispatch>[] = [];
  for (let begin = 0; begin < a.tokens; begin += seg) {
    const end = Math.min(a.tokens, begin + seg);
    parts.push(segment(device, a, begin, end, seg, `${label}[${begin}..${end})`));
  }
  return await Promise.all(parts);
}

/** The dispatch walking tokens [begin, end) of `a`. */
function segment(
  device: GPUDevice,
  a: SsmScanArgs,
  begin: number,
  end: number,
  seg: number,
  label: string,
): Promise<KernelDispatch> {
  return prepareKernel(device, {
    label,
    shader: "ssm_scan",
    entry: "main",
    uniform: [
      end,
      a.heads,
      a.headDim,
      a.dState,
      a.groups,
      a.slotCount,
      seg,
      begin,
      a.x.offset,
      a.x.stride,
      a.dtRows.offset,
      a.dtRows.stride,
      a.b.offset,
      a.b.stride,
      a.c.offset,
      a.c.stride,
    ],
    buffers: {
      1: a.xbc,
      2: a.dt,
      3: a.a,
      4: a.dtBias,
      5: a.stateSlots,
      6: a.positions,
      7: a.state,
      8: a.y,
    },
    workgroups: grid256(device, (end - begin) * a.heads * a.headDim),
  });
}
