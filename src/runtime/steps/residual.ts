/**
 * Residual branches: a product whose output is added to the residual stream, either in the
 * product's epilogue (scaled by the residual multiplier) or, with a post-norm, stored to
 * `branch` and RMSNorm'd and added by one norm dispatch; and the `o_proj_residual` step, the
 * attention output projection as such a branch (with the recipe's o bias).
 */
import { EngineError } from "../../contract/errors.ts";
import { prepareRmsNorm } from "../../gpu/kernels/dense.ts";
import type { GpuLayer } from "../gpu_layers.ts";
import { missing, type Part, type PlanContext, type StepOf } from "./context.ts";

/**
 * A residual branch, `product` writing it: added to x (scaled by the residual multiplier), or
 * with `postNorm`'s weight stored, RMSNorm'd and added by the norm kernel.
 */
export function residual(
  x: PlanContext,
  l: number,
  name: string,
  postNorm: GPUBuffer | undefined | false,
  product: (y: GPUBuffer, epilogue: "accumulate" | "store") => Part,
): Part[] {
  const { c, s } = x;
  if (postNorm === false) return [product(s.x, "accumulate")];
  if (postNorm === undefined) return [Promise.reject(missing(name, l))];
  if (c.residualScale !== undefined) {
    return [
      Promise.reject(
        EngineError.invalidArgument("config.residual_multiplier: not supported with post-norms"),
      ),
    ];
  }
  return [
    product(s.branch, "store"),
    prepareRmsNorm(x.d, {
      x: s.branch,
      weight: postNorm,
      y: s.x,
      rows: x.tokens,
      dim: x.H,
      eps: c.rmsNormEps,
      dtype: "f32",
      accumulate: true,
    }, `L${l}:${name}`),
  ];
}

/** `o_proj_residual`: the attention output projection (+ o bias) as a residual branch. */
export function oProjResidual(
  x: PlanContext,
  step: StepOf<"o_proj_residual">,
  l: number,
  L: GpuLayer,
): Part[] {
  const o = L.o;
  if (o === undefined) return [Promise.reject(missing("o", l))];
  return residual(
    x,
    l,
    "attnOutNorm",
    step.postNorm === true && L.attnOutNorm,
    (y, epilogue) =>
      x.linear({
        x: x.s.attn,
        weight: o,
        ...(L.oBias ? { b: L.oBias } : {}),
        y,
        n: x.H,
        k: x.Q,
        epilogue,
        ...x.branch,
      }, `L${l}:o`),
  );
}
