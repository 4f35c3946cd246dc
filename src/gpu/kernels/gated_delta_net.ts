/**
 * Wrapper for `shaders/gated_delta_net.wgsl`: the gated delta rule (Qwen3.5's linear attention)
 * in its recurrent form, one dispatch per segment of the step's tokens, prefill and decode alike.
 *
 * Per value head h the state S is [kDim, vDim]; per token: S = exp(g)·S, d = beta·(v - Sᵀk),
 * S += k⊗d, out = Sᵀq / sqrt(kDim) (llama.cpp's `ggml_gated_delta_net`, its order of operations).
 * The state buffer is f32 [slots, vHeads, vDim, kDim]: `state[((slot·vHeads + h)·vDim + j)·kDim
 * + i] = S[i][j]` (with kDim = vDim, ggml's layout).
 */
import { checkBuffer, checkCount, fail, type KernelDispatch, prepareKernel } from "./kernel.ts";
import { grid } from "../dispatch.ts";

/** An f32 input or output read per token: element `e` of token t at `t·stride + offset + e`. */
export interface StridedF32 {
  /** The buffer. */
  buffer: GPUBuffer;
  /** Floats from one token's row to the next. */
  stride: number;
  /** Floats before token 0's first element. */
  offset: number;
}

/** Which key head value head h reads. */
export type DeltaHeadMap = "tiled" | "grouped";

/** Buffers and sizes of {@linkcode prepareGatedDeltaNet}. */
export interface GatedDeltaNetArgs {
  /** Queries [tokens, kHeads, kDim] (L2-normalised). */
  q: StridedF32;
  /** Keys [tokens, kHeads, kDim] (L2-normalised). */
  k: StridedF32;
  /** Values [tokens, vHeads, vDim]. */
  v: StridedF32;
  /** Log decay [tokens, vHeads] (applied as exp(g) to the state before the read). */
  g: StridedF32;
  /** Write strength [tokens, vHeads], already sigmoid'ed. */
  beta: StridedF32;
  /** Recurrent state f32 [slots, vHeads, vDim, kDim] (see the module doc), read and written. */
  state: GPUBuffer;
  /** Per token: its position in its sequence (u32); a run starting at 0 starts from zeros. */
  positions: GPUBuffer;
  /** Per token: its sequence's state slot (u32); a slot >= `slots` is skipped. */
  stateSlots: GPUBuffer;
  /** Output [tokens, vHeads, vDim]. */
  out: StridedF32;
  /** Tokens of the step. */
  tokens: number;
  /** Key (and query) heads. */
  kHeads: number;
  /** Value heads, a multiple of `kHeads`. */
  vHeads: number;
  /** Key head dim, 1..128. */
  kDim: number;
  /** Value head dim, 1..128. */
  vDim: number;
  /** State slots in `state`. */
  slots: number;
  /**
   * Value head h reads key head `h % kHeads` ("tiled", llama.cpp's GGUF order, the default) or
   * `floor(h / (vHeads / kHeads))` ("grouped", the Hugging Face order).
   */
  headMap?: DeltaHeadMap;
  /** Most tokens per dispatch (default and maximum {@linkcode deltaSegmentTokens}). */
  segmentTokens?: number;
}

/** The largest key or value head dim one thread holds (its private column of the state). */
export const DELTA_MAX_DIM = 128;

/**
 * Loop iterations one thread may spend: lavapipe ends an invocation's loops after 65535 in all
 * (measured with this shader: one unsegmented thread stopped after 977 tokens at kDim 128 and
 * 7281 at kDim 12, i.e. 2·ceil(kDim/4) + 3 iterations a token); this keeps 8% below it.
 */
const LOOP_BUDGET = 60000;

/**
 * The most tokens one dispatch walks for key head dim `kDim`: a thread spends 2·ceil(kDim/4)
 * iterations loading and storing its column and 2·ceil(kDim/4) + 3 per token, within 60000:
 * 894 tokens at kDim 128 (a 512-token run costs 34368 iterations), 6666 at kDim 12. Longer steps
 * take several dispatches, a run cut between two going on from the state its slot holds.
 */
export function deltaSegmentTokens(kDim: number): number {
  const s4 = Math.ceil(kDim / 4);
  return Math.floor((LOOP_BUDGET - 2 * s4) / (2 * s4 + 3));
}

/** Refuse a strided tensor of `width` floats a token whose buffer cannot hold `tokens` rows. */
export function checkStrided(
  device: GPUDevice,
  what: string,
  name: string,
  x: StridedF32,
  width: number,
  tokens: number,
): void {
  checkCount(what, `${name}.offset`, x.offset, 0);
  checkCount(what, `${name}.stride`, x.stride, 1);
  if (x.offset + width > x.stride) {
    fail(what, `${name}: offset ${x.offset} + width ${width} exceeds stride ${x.stride}`);
  }
  checkBuffer(
    device,
    what,
    `${name}.buffer`,
    x.buffer,
    ((tokens - 1) * x.stride + x.offset + width) * 4,
  );
}

/** Check every count and buffer of `a`; the segment length to use. */
function checkArgs(device: GPUDevice, what: string, a: GatedDeltaNetArgs): number {
  for (const n of ["tokens", "kHeads", "vHeads", "kDim", "vDim", "slots"] as const) {
    checkCount(what, n, a[n], 1);
  }
  for (const n of ["kDim", "vDim"] as const) {
    if (a[n] > DELTA_MAX_DIM) fail(what, `${n} must be <= ${DELTA_MAX_DIM}, got ${a[n]}`);
  }
  if (a.vHeads % a.kHeads !== 0) {
    fail(what, `vHeads (${a.vHeads}) must be a multiple of kHeads (${a.kHeads})`);
  }
  if (a.headMap !== undefined && a.headMap !== "tiled" && a.headMap !== "grouped") {
    fail(what, `headMap must be "tiled" or "grouped", got ${JSON.stringify(a.headMap)}`);
  }
  const most = deltaSegmentTokens(a.kDim);
  const seg = a.segmentTokens ?? most;
  checkCount(what, "segmentTokens", seg, 1);
  if (seg > most) fail(what, `segmentTokens must be <= ${most} at kDim ${a.kDim}, got ${seg}`);
  const qk = a.kHeads * a.kDim, vw = a.vHeads * a.vDim;
  checkStrided(device, what, "q", a.q, qk, a.tokens);
  checkStrided(device, what, "k", a.k, qk, a.tokens);
  checkStrided(device, what, "v", a.v, vw, a.tokens);
  checkStrided(device, what, "g", a.g, a.vHeads, a.tokens);
  checkStrided(device, what, "beta", a.beta, a.vHeads, a.tokens);
  checkStrided(device, what, "out", a.out, vw, a.tokens);
  checkBuffer(device, what, "state", a.state, a.slots * a.vHeads * a.vDim * a.kDim * 4);
  checkBuffer(device, what, "positions", a.positions, a.tokens * 4);
  checkBuffer(device, what, "stateSlots", a.stateSlots, a.tokens * 4);
  return seg;
}

/**
 * The gated delta rule over a step's tokens: `out` for every token, each slot's state carried
 * through its run (see the module doc). One thread per (token, value head, value column); the
 * thread of a run's first token walks the run, the others return. Returns one dispatch per
 * `segmentTokens` tokens, to be recorded in order.
 */
export async function prepareGatedDeltaNet(
  device: GPUDevice,
  a: GatedDeltaNetArgs,
  label = "gated_delta_net",
): Promise<KernelDispatch[]> {
  const seg = checkArgs(device, label, a);
  const group = a.headMap === "grouped" ? a.vHeads / a.kHeads : 0;
  const buffers = {
    1: a.q.buffer,
    2: a.k.buffer,
    3: a.v.buffer,
    4: a.g.buffer,
    5: a.beta.buffer,
    6: a.state,
    7: a.positions,
    8: a.stateSlots,
    9: a.out.buffer,
  };
  const dispatches: KernelDispatch[] = [];
  for (let begin = 0; begin < a.tokens; begin += seg) {
    const end = Math.min(a.tokens, begin + seg);
    const threads = (end - begin) * a.vHeads * a.vDim;
    dispatches.push(
      await prepareKernel(device, {
        label: `${label}:${begin}`,
        shader: "gated_delta_net",
        entry: "main",
        // deno-fmt-ignore
        uniform: [
          a.tokens, begin, end, a.kHeads, a.vHeads, a.kDim, a.vDim, group,
          a.q.stride, a.q.offset, a.k.stride, a.k.offset, a.v.stride, a.v.offset,
          a.g.stride, a.g.offset, a.beta.stride, a.beta.offset, a.out.stride, a.out.offset,
          a.slots, 1 / Math.sqrt(a.kDim), 0, 0,
        ],
        floats: [21],
        buffers,
        workgroups: grid(device, Math.ceil(threads / 64)),
      }),
    );
  }
  return dispatches;
}
