/**
 * A `moe_mlp` step's dispatches (`step_plan.ts` compiles the other steps): the router as a
 * product with the MLP's norm folded in (its bias, with `biases`, in the product's epilogue),
 * the routing (softmax, top-k), and the routed experts' gate/up and down (`gpu/kernels/moe.ts`)
 * with the step's activation and, with `biases`, each expert's biases.
 */
import { EngineError } from "../contract/errors.ts";
import type { Dispatch } from "../gpu/dispatch.ts";
import { type ExpertBiases, prepareMoeExperts, prepareMoeRoute } from "../gpu/kernels/moe.ts";
import type { ProductArgs } from "../gpu/kernels/product.ts";
import type { LayerStep } from "../model/arch/mod.ts";
import type { ModelConfig } from "../model/config.ts";
import type { GpuLayer } from "./gpu_model.ts";
import type { MoeScratch } from "./step_plan.ts";

/** What a `moe_mlp` step reads from the plan it is part of. */
export interface MoeStepContext {
  device: GPUDevice;
  config: ModelConfig;
  /** The residual stream [tokens, hidden]. */
  x: GPUBuffer;
  /** The plan's MoE scratch (absent in a model without experts). */
  scratch: MoeScratch | undefined;
  tokens: number;
  /** A product over the plan's rows (`prepareProduct` with the plan's scratch). */
  linear: (args: Omit<ProductArgs, "m">, label: string) => Promise<Dispatch[]>;
}

const lacks = (role: string, l: number) =>
  EngineError.invalidArgument(`layer ${l}: the recipe reads ${role}, which it lacks`);

/** The router's bias when the step has biases (a layer without it is refused). */
function routerBias(step: MoeStep, l: number, L: GpuLayer): { b?: GPUBuffer } {
  if (!step.biases) return {};
  if (!L.routerBias) throw lacks("routerBias", l);
  return { b: L.routerBias };
}

/** The experts' biases when the step has them (a layer without them is refused). */
function expertBiases(step: MoeStep, l: number, L: GpuLayer): { biases?: ExpertBiases } {
  if (!step.biases) return {};
  if (!L.experts?.biases) throw lacks("the experts' gateBias/upBias/downBias", l);
  return { biases: L.experts.biases };
}

/** The experts' activation, with the clamped SwiGLU's limit from the config. */
function activation(step: MoeStep, c: ModelConfig) {
  if (step.act === "silu") return {};
  const limit = c.moe?.swigluLimit;
  if (limit === undefined) {
    throw EngineError.invalidArgument("config.swiglu_limit: missing for swiglu_oai experts");
  }
  return { activation: step.act, swigluLimit: limit };
}

type MoeStep = Extract<LayerStep, { op: "moe_mlp" }>;

/** The dispatches of `step` in layer `l` (each a promise, refusals included). */
export function moeStepParts(
  x: MoeStepContext,
  step: MoeStep,
  l: number,
  L: GpuLayer,
): Promise<Dispatch[] | Dispatch>[] {
  const c = x.config, moe = c.moe, sm = x.scratch, d = x.device;
  try {
    if (!moe || !sm || !L.router || !L.experts) throw lacks("experts", l);
    if (!L.postNorm) throw lacks("postNorm", l);
    const norm = { weight: L.postNorm, eps: c.rmsNormEps };
    const shape = { tokens: x.tokens, experts: moe.experts, topK: moe.topK };
    return [
      x.linear({
        x: x.x,
        weight: L.router,
        y: sm.logits,
        n: moe.experts,
        k: c.hiddenSize,
        norm,
        ...routerBias(step, l, L),
      }, `L${l}:router`),
      prepareMoeRoute(d, {
        ...shape,
        logits: sm.logits,
        ids: sm.ids,
        weights: sm.weights,
        norm: moe.normTopK,
      }, `L${l}:route`),
      prepareMoeExperts(d, {
        ...shape,
        x: x.x,
        norm,
        gateUp: L.experts.gateUp,
        down: L.experts.down,
        ids: sm.ids,
        weights: sm.weights,
        act: sm.act,
        hidden: c.hiddenSize,
        inter: moe.expertIntermediateSize,
        ...activation(step, c),
        ...expertBiases(step, l, L),
      }, `L${l}:experts`),
    ];
  } catch (e) {
    return [Promise.reject(e)];
  }
}
