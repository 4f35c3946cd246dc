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
 *   each output on `gpu` kernel paths. A slab too big for one binding is held in several
 *   buffers of whole experts (`expertChunks`): each pass then runs once per buffer, each run
 *   doing only the routes to that buffer's experts.
 *
 * A router bias (gpt-oss) is the router product's own bias (`ProductArgs.b`): it is added before
 * routing, and routing needs nothing else for it.
 */
import { EngineError } from "../../contract/errors.ts";
import { grid } from "../dispatch.ts";
import { kernelPaths } from "../paths.ts";
import type { TensorDtype } from "../dtype.ts";
import { productFormat, productRowBytes } from "../formats/registry.ts";
import { shaderVariant } from "../shader_compose.ts";
import {
  checkBuffer,
  checkCount,
  fail,
  type KernelDispatch,
  type KernelSpec,
  placeholder,
  prepareKernel,
  tableBinding,
} from "./kernel.ts";

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

/** One buffer of a slab: the rows of `experts` whole experts, expert after expert. */
export interface ExpertPart {
  /** The experts' rows, the first expert's at byte 0. */
  buffer: GPUBuffer;
  /** Experts in this buffer (the first follows the previous part's last). */
  experts: number;
}

/**
 * A stack of every expert's matrix, in one format: one buffer (the common case), or several
 * of whole experts when the stack is bigger than one binding.
 */
export interface ExpertSlab {
  /** Every expert's rows, expert after expert, in buffers of whole experts. */
  parts: ExpertPart[];
  /** Their format (float or GGUF block type). */
  dtype: TensorDtype;
}

/**
 * How many experts each buffer of a slab holds: as many whole experts as fit in `limit` bytes
 * (the last buffer the rest). An expert bigger than `limit` is refused (`ResourceExhausted`),
 * naming `name`.
 */
export function expertChunks(
  name: string,
  experts: number,
  bytesPerExpert: number,
  limit: number,
): number[] {
  const per = Math.floor(limit / bytesPerExpert);
  if (per < 1) {
    throw new EngineError(
      "ResourceExhausted",
      `${name}: one expert's matrices take ${bytesPerExpert} bytes; a binding holds ${limit}`,
    );
  }
  const counts = [];
  for (let first = 0; first < experts; first += per) counts.push(Math.min(per, experts - first));
  return counts;
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
 * weight rows (as `product/matvec.wgsl`'s CPU path does).
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
 * and no other. `hidden` and `inter` must be whole numbers of the formats' blocks. Each pass is
 * one dispatch per buffer of its slab (one, for a slab in one buffer), run in order.
 */
export async function prepareMoeExperts(
  device: GPUDevice,
  a: MoeExpertsArgs,
  label = "moe_experts",
): Promise<KernelDispatch[]> {
  const { oai, limit } = checkExperts(device, a);
  const { tpr, wg, rpt } = expertThreads(device, a.threadsPerRow);
  const constants = { WG: wg, TPR: tpr, RPT: rpt, ACT: oai ? 1 : 0, BIASES: a.biases ? 1 : 0 };
  /** Workgroups for `rows` output rows in blocks of `rpt` per `tokens` token (or route). */
  const groups = (tokens: number, rows: number) =>
    grid(device, Math.ceil(tokens * Math.ceil(rows / rpt) / (wg / tpr)));
  /**
   * One pass's dispatches, one per buffer of `slab` (its first expert and count in the
   * uniform), `bind` giving the bindings around the buffer's weights.
   */
  const pass = async (
    entry: "gate_up" | "down",
    slab: ExpertSlab,
    bind: (weights: GPUBuffer) => Record<number, GPUBuffer>,
    workgroups: KernelSpec["workgroups"],
  ): Promise<KernelDispatch[]> => {
    const format = productFormat(slab.dtype);
    const table = await tableBinding(device, format);
    const shader = shaderVariant("moe_experts", { format: format.fragment });
    let first = 0;
    return await Promise.all(slab.parts.map((part) => {
      const range = `[${first}..${first + part.experts - 1}]`;
      const uniform = [a.tokens, a.hidden, a.inter, a.topK, a.norm.eps, limit, first, part.experts];
      first += part.experts;
      return prepareKernel(device, {
        label: `${label}:${entry}${slab.parts.length > 1 ? range : ""}`,
        shader,
        entry,
        constants,
        uniform,
        floats: [4, 5],
        buffers: { ...bind(part.buffer), ...table },
        workgroups,
      });
    }));
  };
  const [gateUp, down] = await Promise.all([
    pass("gate_up", a.gateUp, (w) => ({
      1: a.x,
      2: w,
      3: a.norm.weight,
      4: a.act,
      5: a.ids,
      8: a.biases?.gateUp ?? placeholder(device),
    }), groups(a.tokens * a.topK, a.inter)),
    pass("down", a.down, (w) => ({
      1: a.act,
      2: w,
      4: a.x,
      5: a.ids,
      6: a.weights,
      8: a.biases?.down ?? placeholder(device),
    }), groups(a.tokens, a.hidden)),
  ]);
  return [...gateUp, ...down];
}

/**
 * Check `a` as {@linkcode prepareMoeExperts} takes it (`InvalidArgument` naming the first
 * fault): counts, eps, formats, buffer sizes, activation and biases. Returns whether the
 * activation is `swiglu_oai`, and its limit (0 without one).
 */
function checkExperts(device: GPUDevice, a: MoeExpertsArgs): { oai: boolean; limit: number } {
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
  checkParts(device, "gateUp", a.gateUp, a.experts, 2 * a.inter * productRowBytes(fg, a.hidden));
  checkParts(device, "down", a.down, a.experts, a.hidden * productRowBytes(fd, a.inter));
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
  return { oai, limit };
}

/**
 * `slab`'s parts hold `experts` experts of `perExpert` bytes each between them, each part its
 * own binding.
 */
function checkParts(
  device: GPUDevice,
  name: string,
  slab: ExpertSlab,
  experts: number,
  perExpert: number,
): void {
  const what = "moe_experts";
  if (slab.parts.length === 0) fail(what, `${name} has no buffers`);
  let total = 0;
  slab.parts.forEach((p, i) => {
    checkCount(what, `${name} part ${i}'s experts`, p.experts, 1);
    checkBuffer(device, what, `${name} part ${i}`, p.buffer, p.experts * perExpert);
    total += p.experts;
  });
  if (total !== experts) fail(what, `${name}'s parts hold ${total} experts, not ${experts}`);
}
