/**
 * The `short_conv` step (LFM2's convolution layers): the input RMSNorm folded into `convIn`'s
 * product (B | C | x rows), the gated causal convolution over each sequence with its recurrent
 * state (`gpu/kernels/short_conv.ts`: the convolution, then the state update), and `convOut`'s
 * product added to the residual stream. Four dispatches per layer at any step shape.
 */
import { prepareShortConv } from "../../gpu/kernels/short_conv.ts";
import type { GpuLayer } from "../gpu_layers.ts";
import { missing, type Part, type PlanContext, type StepOf } from "./context.ts";

/** `short_conv`: in_proj (norm folded), the gated convolution with state, out_proj + residual. */
export function shortConv(
  x: PlanContext,
  _step: StepOf<"short_conv">,
  l: number,
  L: GpuLayer,
): Part[] {
  const { c, s, m, H } = x;
  const state = m.state[l];
  for (const [role, t] of [["convIn", L.convIn], ["conv", L.conv], ["convOut", L.convOut]]) {
    if (t === undefined) return [Promise.reject(missing(role as string, l))];
  }
  if (L.inputNorm === undefined) return [Promise.reject(missing("inputNorm", l))];
  if (state === undefined || c.convWidth === undefined) {
    return [Promise.reject(missing("a recurrent state", l))];
  }
  return [
    x.linear({
      x: s.x,
      weight: L.convIn!,
      y: s.qkv,
      n: 3 * H,
      k: H,
      norm: { weight: L.inputNorm, eps: c.rmsNormEps },
    }, `L${l}:conv_in`),
    prepareShortConv(x.d, {
      input: s.qkv,
      rowStride: 3 * H,
      mode: "gated",
      bOffset: 0,
      cOffset: H,
      xOffset: 2 * H,
      weight: L.conv!,
      state: state.conv,
      positions: s.positions,
      stateSlots: s.stateSlots,
      out: s.attn,
      outStride: H,
      tokens: x.tokens,
      channels: H,
      width: c.convWidth,
      slots: m.stateSlots,
    }, `L${l}:short_conv`),
    x.linear({
      x: s.attn,
      weight: L.convOut!,
      y: s.x,
      n: H,
      k: H,
      epilogue: "accumulate",
      ...x.branch,
    }, `L${l}:conv_out`),
  ];
}
