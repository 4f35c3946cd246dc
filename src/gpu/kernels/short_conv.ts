/**
 * Wrapper for `shaders/short_conv.wgsl`: the causal short convolution of recurrent layers (LFM2's
 * gated conv, the conv before SiLU of Mamba2 and Qwen3.5) over a step of several sequences, each
 * with a rolling state of its last `width - 1` conv inputs in a slot of its own.
 */
import {
  checkBuffer,
  checkCount,
  fail,
  grid256,
  type KernelDispatch,
  placeholder,
  prepareKernel,
} from "./kernel.ts";

/** Buffers and shape of {@linkcode prepareShortConv}. */
export interface ShortConvArgs {
  /** Input rows, f32 [tokens, rowStride]; token t's conv input x is at t·rowStride + xOffset. */
  input: GPUBuffer;
  /** Elements from one token's input row to the next. */
  rowStride: number;
  /** Element of a row where the conv's x starts (`channels` wide). */
  xOffset: number;
  /**
   * "gated" (LFM2): the row holds B, C and x; u = B ⊙ x enters the conv and out = C ⊙ conv(u).
   * "silu": u = x and out = silu(conv(u) + bias).
   */
  mode: "gated" | "silu";
  /** Element of a row where B starts ("gated" only). */
  bOffset?: number;
  /** Element of a row where C starts ("gated" only). */
  cOffset?: number;
  /** Conv weight, f32 [channels, width]; tap width-1 multiplies the current token. */
  weight: GPUBuffer;
  /** Conv bias, f32 [channels] ("silu" mode only, optional). */
  bias?: GPUBuffer;
  /**
   * Rolling state, f32 [slots, width-1, channels]: row j of a slot holds u at position
   * p0 - (width-1) + j, p0 being the position of the slot's next token. Read, then updated.
   */
  state: GPUBuffer;
  /** Each token's position, u32 [tokens]. */
  positions: GPUBuffer;
  /** Each token's state slot, u32 [tokens] (a run's tokens are contiguous and consecutive). */
  stateSlots: GPUBuffer;
  /** Output, f32: out[t·outStride + c]. Must not be `input`. */
  out: GPUBuffer;
  /** Elements from one token's output row to the next. */
  outStride: number;
  /** Tokens in the step. */
  tokens: number;
  /** Conv channels. */
  channels: number;
  /** Taps of the conv, 2..8. */
  width: number;
  /** Slots in `state`. */
  slots: number;
}

const WHAT = "short_conv";

/** Refuse offsets, strides and buffer sizes that do not fit the shape. */
function checkShortConv(device: GPUDevice, a: ShortConvArgs): void {
  checkCount(WHAT, "tokens", a.tokens, 1);
  checkCount(WHAT, "channels", a.channels, 1);
  checkCount(WHAT, "slots", a.slots, 1);
  checkCount(WHAT, "width", a.width, 2);
  if (a.width > 8) fail(WHAT, `width must be 2..8, got ${a.width}`);
  checkCount(WHAT, "rowStride", a.rowStride, 1);
  checkCount(WHAT, "outStride", a.outStride, a.channels);
  const gated = a.mode === "gated";
  if (!gated && a.mode !== "silu") fail(WHAT, `mode must be "gated" or "silu", got ${a.mode}`);
  if (gated && a.bias !== undefined) fail(WHAT, `bias is for "silu" mode only`);
  const offsets: [string, number | undefined][] = [["xOffset", a.xOffset]];
  if (gated) offsets.push(["bOffset", a.bOffset], ["cOffset", a.cOffset]);
  let rowEnd = 0;
  for (const [name, v] of offsets) {
    if (v === undefined) fail(WHAT, `${name} is required in "gated" mode`);
    checkCount(WHAT, name, v, 0);
    if (v + a.channels > a.rowStride) {
      fail(WHAT, `${name} ${v} + channels ${a.channels} passes rowStride ${a.rowStride}`);
    }
    rowEnd = Math.max(rowEnd, v + a.channels);
  }
  const f = 4;
  checkBuffer(device, WHAT, "input", a.input, ((a.tokens - 1) * a.rowStride + rowEnd) * f);
  checkBuffer(device, WHAT, "weight", a.weight, a.channels * a.width * f);
  if (a.bias) checkBuffer(device, WHAT, "bias", a.bias, a.channels * f);
  checkBuffer(device, WHAT, "state", a.state, a.slots * (a.width - 1) * a.channels * f);
  checkBuffer(device, WHAT, "positions", a.positions, a.tokens * 4);
  checkBuffer(device, WHAT, "stateSlots", a.stateSlots, a.tokens * 4);
  checkBuffer(device, WHAT, "out", a.out, ((a.tokens - 1) * a.outStride + a.channels) * f);
  if (a.out === a.input) fail(WHAT, "out must not be the input buffer");
}

/**
 * The conv (one thread per token and channel: out from the step's inputs and each slot's state),
 * then the state update (each run's last token writes its slot's new rows): two dispatches to
 * run in this order, the first reading the state the second overwrites.
 */
export async function prepareShortConv(
  device: GPUDevice,
  a: ShortConvArgs,
  label = "short_conv",
): Promise<KernelDispatch[]> {
  checkShortConv(device, a);
  const uniform = [
    a.tokens,
    a.channels,
    a.width,
    a.slots,
    a.rowStride,
    a.xOffset,
    a.bOffset ?? 0,
    a.cOffset ?? 0,
    a.outStride,
    a.mode === "gated" ? 1 : 0,
    a.bias ? 1 : 0,
    0,
  ];
  const workgroups = grid256(device, a.tokens * a.channels);
  const common = { 1: a.input, 5: a.positions, 6: a.stateSlots };
  const conv = await prepareKernel(device, {
    label: `${label}:conv`,
    shader: "short_conv",
    entry: "conv",
    uniform,
    buffers: {
      ...common,
      2: a.weight,
      3: a.bias ?? placeholder(device),
      4: a.state,
      7: a.out,
    },
    workgroups,
  });
  const state = await prepareKernel(device, {
    label: `${label}:state`,
    shader: "short_conv",
    entry: "state",
    uniform,
    buffers: { ...common, 8: a.state },
    workgroups,
  });
  return [conv, state];
}
