/**
 * The `mamba2` step (Granite 4.0-H's recurrent layers), six dispatches at any step shape: the
 * input projection with the input RMSNorm folded in (z | x B C | dt), the causal convolution of
 * x B C with its bias and SiLU and its state update (`short_conv`'s `silu` mode), the selective
 * scan with its state (`ssm_scan`), the D skip, SiLU gate and grouped RMSNorm (`ssm_gate_norm`),
 * and the output projection added to the residual stream.
 */
import { prepareShortConv } from "../../gpu/kernels/short_conv.ts";
import { prepareSsmGateNorm } from "../../gpu/kernels/ssm_gate_norm.ts";
import { prepareSsmScan } from "../../gpu/kernels/ssm_scan.ts";
import { ssmWidths } from "../../model/ssm_config.ts";
import type { GpuLayer } from "../gpu_layers.ts";
import { missing, type Part, type PlanContext, type StepOf } from "./context.ts";

const ROLES = [
  "inputNorm",
  "ssmIn",
  "ssmConv",
  "ssmConvBias",
  "ssmDtBias",
  "ssmA",
  "ssmD",
  "ssmNorm",
  "ssmOut",
] as const;

/** `mamba2`: in_proj (norm folded), conv, scan, gate and norm, out_proj + residual. */
export function mamba2(x: PlanContext, _step: StepOf<"mamba2">, l: number, L: GpuLayer): Part[] {
  const { c, s, m, H } = x;
  for (const role of ROLES) if (L[role] === undefined) return [Promise.reject(missing(role, l))];
  const state = m.state[l], ssm = c.ssm, scratch = s.ssm;
  if (!state?.ssm || !ssm || !scratch || c.convWidth === undefined) {
    return [Promise.reject(missing("a Mamba2 state", l))];
  }
  const w = ssmWidths(ssm), inner = ssm.inner, gs = ssm.groups * ssm.state;
  const headDim = inner / ssm.heads;
  const common = { positions: s.positions, stateSlots: s.stateSlots, tokens: x.tokens };
  return [
    x.linear({
      x: s.x,
      weight: L.ssmIn!,
      y: s.qkv,
      n: w.in,
      k: H,
      norm: { weight: L.inputNorm!, eps: c.rmsNormEps },
    }, `L${l}:ssm_in`),
    prepareShortConv(x.d, {
      ...common,
      input: s.qkv,
      rowStride: w.in,
      xOffset: inner,
      mode: "silu",
      weight: L.ssmConv!,
      bias: L.ssmConvBias!,
      state: state.conv,
      out: scratch.conv,
      outStride: w.conv,
      channels: w.conv,
      width: c.convWidth,
      slots: m.stateSlots,
    }, `L${l}:ssm_conv`),
    prepareSsmScan(x.d, {
      ...common,
      xbc: scratch.conv,
      x: { offset: 0, stride: w.conv },
      b: { offset: inner, stride: w.conv },
      c: { offset: inner + gs, stride: w.conv },
      dt: s.qkv,
      dtRows: { offset: inner + w.conv, stride: w.in },
      a: L.ssmA!,
      dtBias: L.ssmDtBias!,
      state: state.ssm,
      y: scratch.y,
      heads: ssm.heads,
      headDim,
      dState: ssm.state,
      groups: ssm.groups,
      slotCount: m.stateSlots,
    }, `L${l}:ssm_scan`),
    prepareSsmGateNorm(x.d, {
      y: { buffer: scratch.y, stride: inner, offset: 0 },
      x: { buffer: scratch.conv, stride: w.conv, offset: 0 },
      z: { buffer: s.qkv, stride: w.in, offset: 0 },
      d: L.ssmD!,
      weight: L.ssmNorm!,
      out: scratch.out,
      tokens: x.tokens,
      heads: ssm.heads,
      headDim,
      groups: ssm.groups,
      eps: c.rmsNormEps,
    }, `L${l}:ssm_gate_norm`),
    x.linear({
      x: scratch.out,
      weight: L.ssmOut!,
      y: s.x,
      n: H,
      k: inner,
      epilogue: "accumulate",
      ...x.branch,
    }, `L${l}:ssm_out`),
  ];
}
