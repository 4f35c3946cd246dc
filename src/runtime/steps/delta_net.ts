/**
 * The `delta_net` step (Qwen3.5's gated delta net layers), seven dispatches at any step shape
 * (the delta rule one more per `deltaSegmentTokens` tokens): the q | k | v product and the
 * z | beta | alpha product, each with the input RMSNorm folded in; the causal convolution of
 * q | k | v with SiLU and its state (`short_conv`'s `silu` mode); the L2 norms of q and k and the
 * beta and decay gates (`delta_prep`); the delta rule with its state (`gated_delta_net`); the
 * per-head RMSNorm times SiLU(z) (`delta_prep`'s norm gate); the output product added to the
 * residual stream.
 */
import { prepareDeltaPrep, prepareNormGate } from "../../gpu/kernels/delta_prep.ts";
import { prepareGatedDeltaNet } from "../../gpu/kernels/gated_delta_net.ts";
import { prepareShortConv } from "../../gpu/kernels/short_conv.ts";
import { deltaWidths } from "../../model/ssm_config.ts";
import type { GpuLayer } from "../gpu_layers.ts";
import { missing, type Part, type PlanContext, type StepOf } from "./context.ts";

const ROLES = [
  "inputNorm",
  "deltaQkv",
  "deltaZba",
  "ssmConv",
  "ssmDtBias",
  "ssmA",
  "ssmNorm",
  "ssmOut",
] as const;

/** `delta_net`: the layer's products, convolution, gates, delta rule, norm gate and output. */
export function deltaNet(
  x: PlanContext,
  _step: StepOf<"delta_net">,
  l: number,
  L: GpuLayer,
): Part[] {
  const { c, s, m, H } = x;
  for (const role of ROLES) if (L[role] === undefined) return [Promise.reject(missing(role, l))];
  const state = m.state[l], d = c.delta, scratch = s.delta;
  if (!state?.ssm || !d || !scratch || c.convWidth === undefined) {
    return [Promise.reject(missing("a delta net state", l))];
  }
  const w = deltaWidths(d), qk = d.kHeads * d.kDim, zba = w.inner + 2 * d.vHeads;
  const norm = { weight: L.inputNorm!, eps: c.rmsNormEps };
  const dims = { kHeads: d.kHeads, vHeads: d.vHeads, kDim: d.kDim };
  const runs = { positions: s.positions, stateSlots: s.stateSlots, tokens: x.tokens };
  const conv = (offset: number) => ({ buffer: scratch.conv, stride: w.conv, offset });
  return [
    x.linear({ x: s.x, weight: L.deltaQkv!, y: s.qkv, n: w.conv, k: H, norm }, `L${l}:delta_qkv`),
    x.linear(
      { x: s.x, weight: L.deltaZba!, y: scratch.zba, n: zba, k: H, norm },
      `L${l}:delta_zba`,
    ),
    prepareShortConv(x.d, {
      ...runs,
      input: s.qkv,
      rowStride: w.conv,
      xOffset: 0,
      mode: "silu",
      weight: L.ssmConv!,
      state: state.conv,
      out: scratch.conv,
      outStride: w.conv,
      channels: w.conv,
      width: c.convWidth,
      slots: m.stateSlots,
    }, `L${l}:delta_conv`),
    prepareDeltaPrep(x.d, {
      conv: conv(0),
      ab: { buffer: scratch.zba, stride: zba, offset: w.inner },
      dtBias: L.ssmDtBias!,
      a: L.ssmA!,
      beta: scratch.beta,
      g: scratch.g,
      tokens: x.tokens,
      ...dims,
      eps: c.rmsNormEps,
    }, `L${l}:delta_prep`),
    prepareGatedDeltaNet(x.d, {
      ...runs,
      q: conv(0),
      k: conv(qk),
      v: conv(2 * qk),
      g: { buffer: scratch.g, stride: d.vHeads, offset: 0 },
      beta: { buffer: scratch.beta, stride: d.vHeads, offset: 0 },
      state: state.ssm,
      out: { buffer: scratch.o, stride: w.inner, offset: 0 },
      ...dims,
      vDim: d.vDim,
      slots: m.stateSlots,
      headMap: d.headMap,
    }, `L${l}:delta_rule`),
    prepareNormGate(x.d, {
      o: { buffer: scratch.o, stride: w.inner, offset: 0 },
      z: { buffer: scratch.zba, stride: zba, offset: 0 },
      weight: L.ssmNorm!,
      out: scratch.out,
      tokens: x.tokens,
      heads: d.vHeads,
      headDim: d.vDim,
      eps: c.rmsNormEps,
    }, `L${l}:delta_norm_gate`),
    x.linear({
      x: scratch.out,
      weight: L.ssmOut!,
      y: s.x,
      n: H,
      k: w.inner,
      epilogue: "accumulate",
      ...x.branch,
    }, `L${l}:delta_out`),
  ];
}
