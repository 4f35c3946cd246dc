/**
 * Gated attention (Qwen3.5's full-attention layers): the query projection holds each head's query
 * then its output gate, so `attn_norm_qkv` with `gatedQuery` runs the q/k/v product into rows of
 * 2Q + 2KV and splits them into the usual q | k | v rows and the gates (`query_gate.wgsl`); after
 * attention, `attention_gate` multiplies its output by sigmoid(gate).
 */
import { prepareQueryGateSplit, prepareSigmoidGate } from "../../gpu/kernels/query_gate.ts";
import type { GpuLayer } from "../gpu_layers.ts";
import { missing, type Part, type PlanContext, type StepOf } from "./context.ts";

/** The gated q/k/v product (input norm folded) and its split into q | k | v and the gates. */
export function gatedQkv(x: PlanContext, l: number, L: GpuLayer): Part[] {
  const { s, c } = x, scratch = s.gatedQuery;
  if (L.qkv === undefined) return [Promise.reject(missing("q", l))];
  if (L.inputNorm === undefined) return [Promise.reject(missing("inputNorm", l))];
  if (scratch === undefined) return [Promise.reject(missing("a gated query's scratch", l))];
  return [
    x.linear({
      x: s.x,
      weight: L.qkv,
      y: scratch.rows,
      n: 2 * x.Q + 2 * x.KV,
      k: x.H,
      norm: { weight: L.inputNorm, eps: c.rmsNormEps },
    }, `L${l}:qkv_gated`),
    prepareQueryGateSplit(x.d, {
      input: scratch.rows,
      qkv: s.qkv,
      gate: scratch.gate,
      tokens: x.tokens,
      heads: c.numHeads,
      kvHeads: c.numKvHeads,
      headDim: c.headDim,
    }, `L${l}:q_gate_split`),
  ];
}

/** `attention_gate`: the attention output times sigmoid of its gate, in place. */
export function attentionGate(
  x: PlanContext,
  _step: StepOf<"attention_gate">,
  l: number,
): Part[] {
  const gate = x.s.gatedQuery?.gate;
  if (gate === undefined) return [Promise.reject(missing("a gated query", l))];
  return [
    prepareSigmoidGate(x.d, { attn: x.s.attn, gate, tokens: x.tokens, width: x.Q }, `L${l}:gate`),
  ];
}
