/**
 * The mixture-of-experts MLP's own kernels (the router itself is an ordinary product,
 * `product.ts`):
 *
 * - `prepareMoeRoute` (`shaders/moe_route.wgsl`): each token's softmax over its router logits,
 *   its top-k experts and their weights (renormalised over the chosen ones, or not).
 * - `prepareMoeExperts` (`shaders/moe_experts.wgsl`, composed per weight format like the product
 *   kernels): the gated MLP of each token's routed experts only (SwiGLU, or gpt-oss's clamped
 *   SwiGLU; with per-expert biases or without), weighted and added to the residual stream; two
 *   dispatches (gate/up with the RMSNorm folded in, then down), with several threads sharing
 *   each output on `gpu` kernel paths.
 *
 * A router bias (gpt-oss) is the router product's own bias (`ProductArgs.b`): it is added before
 * routing, and routing needs nothing else for it.
 */
import { grid } from "../dispatch.ts";
import { kernelPaths } from "../paths.ts";
import type { TensorDtype } from "../dtype.ts";
import { productFormat, productRowBytes } from "../quant/product_formats.ts";
import { shaderVariant } from "../shader_compose.ts";
import { type KernelDispatch, prepareKernel } from "./kernel.ts";
import { checkBuffer, checkCount, fail, placeholder, tableBinding } from "./matvec_quant.ts";

const WG = 64;

/** The arguments of `prepareMoeRoute`. */
export interface MoeRouteArgs {
  /** The router's outputs, f32 [tokens, experts]. */
  logits: GPUBuffer;
  /** Out: each token's experts, u32 [tokens, topK], most probable first. */
  ids: GPUBuffer;
  /** Out: their weights, f32 [tokens, topK]. */
  weights: GPUBuffer;
  /** Tokens (rows of logits). */
  tokens: number;
  /** Experts (logits per token). */
  experts: number;
  /** Experts chosen per token. */
  topK: number;
  /** Renormalise the chosen experts' probabilities to sum 1. */
  norm: boolean;
}

/** Softmax, top-k and (optionally) renormalisation of each token's router logits. */
export async function prepareMoeRoute(
  device: GPUDevice,
  a: MoeRouteArgs,
  label = "moe_route",
): Promise<KernelDispatch> {
  const what = "moe_route";
  checkCount(what, "tokens", a.tokens, 1);
  checkCount(what, "experts", a.experts, 1);
  checkCount(what, "topK", a.topK, 1);
  if (a.topK > a.experts) fail(what, `topK ${a.topK} is more than the ${a.experts} experts`);
  checkBuffer(device, what, "logits", a.logits, a.tokens * a.experts * 4);
  checkBuffer(device, what, "ids", a.ids, a.tokens * a.topK * 4);
  checkBuffer(device, what, "weights", a.weights, a.tokens * a.topK * 4);
  return await prepareKernel(device, {
    label,
    shader: "moe_route",
    entry: "main",
    constants: { WG },
    uniform: [a.tokens, a.experts, a.topK, a.norm ? 1 : 0],
    buffers: { 1: a.logits, 2: a.ids, 3: a.weights },
    workgroups: grid(device, Math.ceil(a.tokens / WG)),
  });
}

/** A stack of every expert's matrix in one buffer, in one format. */
export interface ExpertSlab {
  /** Every expert's rows, expert after expert. */
  buffer: GPUBuffer;
  /** Their format (float or GGUF block type). */
  dtype: TensorDtype;
}

/** Per-expert biases, f32, in the slabs' expert order. */
export interface ExpertBiases {
  /** [experts · 2·inter]: expert e's gate biases, then its up biases. */
  gateUp: GPUBuffer;
  /** [experts · hidden]: expert e's down biases. */
  down: GPUBuffer;
}

/** The arguments of `prepareMoeExperts`. */
export interface MoeExpertsArgs {
  /** The residual stream, f32 [tokens, hidden]: read (through the norm) and added to. */
  x: GPUBuffer;
  /** The MLP's RMSNorm weight, f32 [hidden], and epsilon. */
  norm: { weight: GPUBuffer; eps: number };
  /** [experts · 2·inter, hidden]: expert e's gate rows, then its up rows. */
  gateUp: ExpertSlab;
  /** [experts · hidden, inter]: expert e's down rows. */
  down: ExpertSlab;
  /** The routes' expert ids (`prepareMoeRoute`'s output), u32 [tokens, topK]. */
  ids: GPUBuffer;
  /** The routes' weights, f32 [tokens, topK]. */
  weights: GPUBuffer;
  /** Scratch, f32 [tokens, topK, inter]. */
  act: GPUBuffer;
  /** Tokens. */
  tokens: number;
  /** Width of the residual stream. */
  hidden: number;
  /** Width of each expert's MLP. */
  inter: number;
  /** Experts in the slabs. */
  experts: number;
  /** Routes per token. */
  topK: number;
  /**
   * The experts' activation of gate g and up u: `silu` (default; SwiGLU, silu(g)·u) or
   * `swiglu_oai` (the clamped SwiGLU: g' = min(g, limit), u' = clamp(u, -limit, limit),
   * (u' + 1)·g'·sigmoid(1.702·g')).
   */
  activation?: "silu" | "swiglu_oai";
  /** `swiglu_oai`'s limit (a positive number; required with it). */
  swigluLimit?: number;
  /** Biases added to each expert's gate, up and down products (default: none). */
  biases?: ExpertBiases;
  /**
   * Threads per output (a power of two up to 64). By default the device's kernel paths say: 1
   * on `cpu` (a thread walks whole rows), as many as the matrix-vector products use on `gpu`.
   */
  threadsPerRow?: number;
}

/**
 * Rows per thread on the one-thread-per-row path: one load of the activations serves this many
 * weight rows (as `matvec_quant`'s CPU path does).
 */
const CPU_RPT = 8;

/** Threads per output, workgroup size and rows per thread of the expert kernels. */
function expertThreads(device: GPUDevice, tpr?: number): { tpr: number; wg: number; rpt: number } {
  const t = tpr ?? kernelPaths(device).matvecThreadsPerRow;
  if (!(Number.isInteger(t) && t >= 1 && t <= 64 && (t & (t - 1)) === 0)) {
    fail("moe_experts", `threadsPerRow ${t} is not a power of two in 1..64`);
  }
  return { tpr: t, wg: t === 1 ? WG : 256, rpt: t === 1 ? CPU_RPT : 1 };
}

/**
 * x[t] += Σⱼ weights[t, j] · down_e(act(gate_e(n), up_e(n))), e = ids[t, j], n = RMSNorm(x[t])
 * (each product plus its expert's bias, with `biases`): the experts each token was routed to,
 * and no other. `hidden` and `inter` must be whole numbers of the formats' blocks.
 */
export async function prepareMoeExperts(
  device: GPUDevice,
  a: MoeExpertsArgs,
  label = "moe_experts",
): Promise<KernelDispatch[]> {
  const what = "moe_experts";
  for (const k of ["tokens", "hidden", "inter", "experts", "topK"] as const) {
    checkCount(what, k, a[k], 1);
  }
  if (a.topK > a.experts) fail(what, `topK ${a.topK} is more than the ${a.experts} experts`);
  if (!(Number.isFinite(a.norm.eps) && a.norm.eps >= 0)) {
    fail(what, `norm eps must be finite and >= 0, got ${a.norm.eps}`);
  }
  const fg = productFormat(a.gateUp.dtype), fd = productFormat(a.down.dtype);
  const routes = a.tokens * a.topK;
  checkBuffer(device, what, "x", a.x, a.tokens * a.hidden * 4);
  checkBuffer(device, what, "norm weight", a.norm.weight, a.hidden * 4);
  checkBuffer(
    device,
    what,
    "gateUp",
    a.gateUp.buffer,
    a.experts * 2 * a.inter * productRowBytes(fg, a.hidden),
  );
  checkBuffer(
    device,
    what,
    "down",
    a.down.buffer,
    a.experts * a.hidden * productRowBytes(fd, a.inter),
  );
  checkBuffer(device, what, "ids", a.ids, routes * 4);
  checkBuffer(device, what, "weights", a.weights, routes * 4);
  checkBuffer(device, what, "act", a.act, routes * a.inter * 4);
  const oai = a.activation === "swiglu_oai";
  if (a.activation !== undefined && a.activation !== "silu" && !oai) {
    fail(what, `unknown activation ${a.activation}`);
  }
  const limit = a.swigluLimit ?? 0;
  if (oai && !(Number.isFinite(limit) && limit > 0)) {
    fail(what, `swigluLimit must be a positive number with swiglu_oai, got ${a.swigluLimit}`);
  }
  if (a.biases) {
    checkBuffer(device, what, "gate/up biases", a.biases.gateUp, a.experts * 2 * a.inter * 4);
    checkBuffer(device, what, "down biases", a.biases.down, a.experts * a.hidden * 4);
  }
  const uniform = [a.tokens, a.hidden, a.inter, a.topK, a.norm.eps, limit, 0, 0];
  const { tpr, wg, rpt } = expertThreads(device, a.threadsPerRow);
  const constants = { WG: wg, TPR: tpr, RPT: rpt, ACT: oai ? 1 : 0, BIASES: a.biases ? 1 : 0 };
  /** Workgroups for `rows` output rows in blocks of `rpt` per `tokens` token (or route). */
  const groups = (tokens: number, rows: number) =>
    grid(device, Math.ceil(tokens * Math.ceil(rows / rpt) / (wg / tpr)));
  return await Promise.all([
    prepareKernel(device, {
      label: `${label}:gate_up`,
      shader: shaderVariant("moe_experts", { format: fg.fragment }),
      entry: "gate_up",
      constants,
      uniform,
      floats: [4, 5],
      buffers: {
        1: a.x,
        2: a.gateUp.buffer,
        3: a.norm.weight,
        4: a.act,
        5: a.ids,
        8: a.biases?.gateUp ?? placeholder(device),
        ...await tableBinding(device, fg),
      },
      workgroups: groups(routes, a.inter),
    }),
    prepareKernel(device, {
      label: `${label}:down`,
      shader: shaderVariant("moe_experts", { format: fd.fragment }),
      entry: "down",
      constants,
      uniform,
      floats: [4, 5],
      buffers: {
        1: a.act,
        2: a.down.buffer,
        4: a.x,
        5: a.ids,
        6: a.weights,
        8: a.biases?.down ?? placeholder(device),
        ...await tableBinding(device, fd),
      },
      workgroups: groups(a.tokens, a.hidden),
    }),
  ]);
}
