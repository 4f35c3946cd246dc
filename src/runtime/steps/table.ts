/**
 * The step compilers by recipe op (`LayerStep["op"]`), as `reference/layer.ts` interprets the
 * same ops in float64: a new layer kind is one compiler here, one reference step and one kernel.
 * The table's type lists every op, so an op without a compiler does not type-check.
 */
import type { LayerStep } from "../../model/arch/mod.ts";
import type { GpuLayer } from "../gpu_layers.ts";
import { attention, attnNormQkv, qkNorm, qkv, rope } from "./attention.ts";
import type { Part, PlanContext, StepCompiler } from "./context.ts";
import { mlp } from "./mlp.ts";
import { moeMlp } from "./moe.ts";
import { oProjResidual } from "./residual.ts";
import { shortConv } from "./short_conv.ts";
import { mamba2 } from "./mamba2.ts";
import { deltaNet } from "./delta_net.ts";
import { attentionGate } from "./gated_attention.ts";

/** One compiler per recipe op. */
export const STEP_COMPILERS: { readonly [K in LayerStep["op"]]: StepCompiler<K> } = {
  attn_norm_qkv: attnNormQkv,
  qkv,
  qk_norm: qkNorm,
  rope,
  attention,
  o_proj_residual: oProjResidual,
  mlp,
  moe_mlp: moeMlp,
  short_conv: shortConv,
  mamba2,
  delta_net: deltaNet,
  attention_gate: attentionGate,
};

/** The kernels of recipe step `step` of layer `l`, by its op's compiler. */
export function compileStep(x: PlanContext, step: LayerStep, l: number, L: GpuLayer): Part[] {
  const compile = STEP_COMPILERS[step.op] as StepCompiler<LayerStep["op"]>;
  return compile(x, step, l, L);
}
