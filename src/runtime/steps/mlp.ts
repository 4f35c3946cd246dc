/**
 * The dense `mlp` step: gate and up as one product, the post-attention RMSNorm folded in (unless
 * `preNorm: false`) and the gated activation (SwiGLU or GeGLU) in its epilogue, then down as a
 * residual branch (`residual.ts`, with the recipe's post-norm).
 */
import type { GpuLayer } from "../gpu_layers.ts";
import { missing, type Part, type PlanContext, type StepOf } from "./context.ts";
import { residual } from "./residual.ts";

/** `mlp`: gate/up with the norm and activation fused, then down added to the residual stream. */
export function mlp(x: PlanContext, step: StepOf<"mlp">, l: number, L: GpuLayer): Part[] {
  const { c, s } = x;
  const pre = step.preNorm === false ? undefined : L.postNorm;
  if (step.preNorm !== false && pre === undefined) {
    return [Promise.reject(missing("postNorm", l))];
  }
  if (L.gateUp === undefined) return [Promise.reject(missing("gate/up", l))];
  const downW = L.down;
  if (downW === undefined) return [Promise.reject(missing("down", l))];
  return [
    x.linear({
      x: s.x,
      weight: L.gateUp,
      y: s.act,
      n: c.intermediateSize,
      k: x.H,
      ...(pre ? { norm: { weight: pre, eps: c.rmsNormEps } } : {}),
      epilogue: step.act === "silu" ? "swiglu" : "geglu",
    }, `L${l}:gate_up`),
    ...residual(
      x,
      l,
      "mlpOutNorm",
      step.postNorm === true && L.mlpOutNorm,
      (y, epilogue) =>
        x.linear({
          x: s.act,
          weight: downW,
          y,
          n: x.H,
          k: c.intermediateSize,
          epilogue,
          ...x.branch,
        }, `L${l}:down`),
    ),
  ];
}
