/**
 * What every step compiler (`src/runtime/steps/`) shares: a forward's scratch buffers, the plan
 * context one step shape is compiled in, and the compiler signature `STEP_COMPILERS` is typed by.
 * `step_plan.ts` builds the context once per step shape; each compiler reads it and its layer.
 */
import { EngineError } from "../../contract/errors.ts";
import type { Dispatch } from "../../gpu/dispatch.ts";
import type { AttentionDispatch } from "../../gpu/kernels/attention.ts";
import type { LinearScratch } from "../../gpu/product/args.ts";
import type { ProductArgs } from "../../gpu/product/product.ts";
import type { LayerStep } from "../../model/arch/mod.ts";
import type { ModelConfig } from "../../model/config.ts";
import type { GpuLayer } from "../gpu_layers.ts";
import type { GpuModel } from "../gpu_model.ts";

/** A forward's scratch buffers, sized for `capacity` tokens (and logit rows). */
export interface Scratch {
  capacity: number;
  tableCapacity: number;
  index: GPUBuffer;
  ids: GPUBuffer;
  positions: GPUBuffer;
  slots: GPUBuffer;
  /** Each token's recurrent-state slot (its sequence's; `StepBatch.stateSlots`). */
  stateSlots: GPUBuffer;
  tableOffsets: GPUBuffer;
  blockTable: GPUBuffer;
  /** The residual stream [tokens, hidden]. */
  x: GPUBuffer;
  /** A residual branch before its post-norm [tokens, hidden]. */
  branch: GPUBuffer;
  /** The fused q/k/v product [tokens, q + 2kv] (or a convolution's B | C | x, 3·hidden). */
  qkv: GPUBuffer;
  /** Rotated q [tokens, q], and attention's (or a convolution's) output. */
  q: GPUBuffer;
  attn: GPUBuffer;
  /** SwiGLU's output [tokens, intermediate]. */
  act: GPUBuffer;
  /** What the unfused (prefill) products need in between. */
  linear: LinearScratch;
  rows: GPUBuffer;
  logits: GPUBuffer;
  /** A mixture-of-experts MLP's router outputs, routes and expert activations. */
  moe?: MoeScratch;
  /**
   * A Mamba2 layer's convolution output [tokens, inner + 2·groups·state], scan output and gated,
   * normed output [tokens, inner].
   */
  ssm?: { conv: GPUBuffer; y: GPUBuffer; out: GPUBuffer };
  /**
   * A gated delta net layer's z | beta | alpha rows, its convolution output, beta and decay
   * [tokens, vHeads], the delta rule's output and the normed, gated output [tokens, vInner].
   */
  delta?: {
    zba: GPUBuffer;
    conv: GPUBuffer;
    beta: GPUBuffer;
    g: GPUBuffer;
    o: GPUBuffer;
    out: GPUBuffer;
  };
  /** A gated query's product rows [tokens, 2Q + 2KV] and its gates [tokens, Q]. */
  gatedQuery?: { rows: GPUBuffer; gate: GPUBuffer };
  /**
   * Split attention's partials, shared by every layer of a step (CPU paths): room for `slots`
   * (token, head, split) partials.
   */
  partials?: { ml: GPUBuffer; acc: GPUBuffer; slots: number };
}

/** [tokens, experts] router logits; [tokens, topK] routes; [tokens, topK, expert width] SwiGLU. */
export interface MoeScratch {
  logits: GPUBuffer;
  ids: GPUBuffer;
  weights: GPUBuffer;
  act: GPUBuffer;
}

/** One prepared kernel (or its refusal), in the order the step's dispatches run. */
export type Part = Promise<Dispatch[] | Dispatch | AttentionDispatch>;

/** What one step shape's compilers read: the model, its scratch and the shape's choices. */
export interface PlanContext {
  m: GpuModel;
  c: ModelConfig;
  d: GPUDevice;
  s: Scratch;
  tokens: number;
  /** hidden, q width (heads·head_dim) and k or v width (kv_heads·head_dim). */
  H: number;
  Q: number;
  KV: number;
  /** How this shape's attention splits the key axis, and the most keys a query may see. */
  splits: number;
  maxKeys: number;
  /** The shared split partials, where they fit this shape. */
  partials: { partials?: NonNullable<Scratch["partials"]> };
  kvDtype: GpuModel["kvDtype"];
  /** The residual multiplier, as a product epilogue's `scale`. */
  branch: { scale?: number };
  /** A product over `xRows` (default: the step's tokens) with the plan's scratch. */
  linear: (args: Omit<ProductArgs, "m">, label: string, xRows?: number) => Promise<Dispatch[]>;
}

/** The recipe step of kind `K`. */
export type StepOf<K extends LayerStep["op"]> = Extract<LayerStep, { op: K }>;

/** Compiles one recipe step of layer `l` into its kernels (each a promise, refusals included). */
export type StepCompiler<K extends LayerStep["op"]> = (
  x: PlanContext,
  step: StepOf<K>,
  l: number,
  L: GpuLayer,
) => Part[];

/** A layer without a weight its recipe reads (a model built around the description's table). */
export function missing(role: string, layer: number): EngineError {
  return EngineError.invalidArgument(`layer ${layer}: the recipe reads ${role}, which it lacks`);
}
