/**
 * The `moe_mlp` step: the router as a product with the MLP's norm folded in (its bias, with
 * `biases`, in the product's epilogue), the routing (softmax, top-k), and the routed experts'
 * gate/up and down (`gpu/kernels/moe.ts`) with the step's activation and, with `biases`, each
 * expert's biases. A layer or config without what the step reads is refused.
 */
import { EngineError } from "../../contract/errors.ts";
import { type ExpertBiases, prepareMoeExperts, prepareMoeRoute } from "../../gpu/kernels/moe.ts";
import type { ModelConfig } from "../../model/config.ts";
import type { GpuLayer } from "../gpu_layers.ts";
import { missing, type Part, type PlanContext, type StepOf } from "./context.ts";

type MoeStep = StepOf<"moe_mlp">;

/** The router's bias when the step has biases (a layer without it is refused). */
function routerBias(step: MoeStep, l: number, L: GpuLayer): { b?: GPUBuffer } {
  if (!step.biases) return {};
  if (!L.routerBias) throw missing("routerBias", l);
  return { b: L.routerBias };
}

/** The experts' biases when the step has them (a layer without them is refused). */
function expertBiases(step: MoeStep, l: number, L: GpuLayer): { biases?: ExpertBiases } {
  if (!step.biases) return {};
  if (!L.experts?.biases) throw missing("the experts' gateBias/upBias/downBias", l);
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

/** `moe_mlp`: router, routing and the routed experts (each a promise, refusals included). */
export function moeMlp(x: PlanContext, step: StepOf<"moe_mlp">, l: number, L: GpuLayer): Part[] {
  const c = x.c, moe = c.moe, sm = x.s.moe, d = x.d;
  try {
    if (!moe || !sm || !L.router || !L.experts) throw missing("experts", l);
    if (!L.postNorm) throw missing("postNorm", l);
    const norm = { weight: L.postNorm, eps: c.rmsNormEps };
    const shape = { tokens: x.tokens, experts: moe.experts, topK: moe.topK };
    return [
      x.linear({
        x: x.s.x,
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
        x: x.s.x,
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
