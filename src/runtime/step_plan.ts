/**
 * One step's dispatches, as a `Forward` caches them per step shape (tokens, logit rows): each
 * layer's recipe (`ArchDescription.layer`) compiled step by step.
 *
 * Per layer of the plain pre-norm recipe, at decode (at most `MATVEC_MAX_M` tokens), six or
 * seven dispatches:
 *   1. q/k/v as one product (stacked weights, + bias), with the input RMSNorm folded in;
 *   2. RoPE on q and k fused with the KV cache write;
 *   3. paged attention (one pass, or split-K and a merge for long contexts);
 *   4. o_proj with the residual add in its epilogue;
 *   5. gate and up as one product, post-attention RMSNorm folded in, SwiGLU in its epilogue;
 *   6. down_proj with the residual add in its epilogue.
 * A mixture-of-experts MLP (`moe_mlp`) takes four instead of 5-6: the router product (the norm
 * folded in), the routing (softmax, top-k), and the routed experts' gate/up and down
 * (`gpu/kernels/moe.ts`), at every step shape (`step_plan_moe.ts`).
 * Prefill shapes run the same steps with the norms, adds and SwiGLU as their own dispatches
 * around the tiled products. Then the rows whose logits are wanted are copied out of the
 * residual stream and multiplied by the LM head with the final norm folded in.
 *
 * The config's attention knobs (`attention_knobs.ts`) go to the kernels: the embedding scale in
 * the gather, the final logit soft-cap as an in-place pass, each layer's window and RoPE base, the attention
 * scale and soft-cap; a recipe's attention sinks and o bias, and its experts' activation and
 * biases, to theirs. A step with a post-norm (`o_proj_residual` / `mlp` with `postNorm`)
 * writes its product to `branch`, and one RMSNorm dispatch adds the normed rows to x.
 */
import { type Dispatch } from "../gpu/dispatch.ts";
import {
  type AttentionDispatch,
  chooseSplits,
  prepareAttention,
  prepareRopeKv,
  ROWS_KEYS,
  rowsSplits,
} from "../gpu/kernels/attention.ts";
import {
  prepareEmbedding,
  prepareHeadNorm,
  prepareRmsNorm,
  prepareScaleInPlace,
} from "../gpu/kernels/dense.ts";
import { EngineError } from "../contract/errors.ts";
import { isFloatDtype } from "../gpu/dtype.ts";
import type { LinearScratch } from "../gpu/kernels/linear.ts";
import { prepareQuantEmbedding } from "../gpu/kernels/matvec_quant.ts";
import { prepareProduct, type ProductArgs } from "../gpu/kernels/product.ts";
import { prepareGather } from "../gpu/kernels/tokens.ts";
import { kernelPaths } from "../gpu/paths.ts";
import { archOf, type LayerStep } from "../model/arch/mod.ts";
import { windowOf } from "../model/attention_knobs.ts";
import type { GpuLayer, GpuModel } from "./gpu_model.ts";
import { layerRotaryDim, ropeAttentionFactor } from "../model/rope.ts";
import { moeStepParts } from "./step_plan_moe.ts";

/** A layer without a weight its recipe reads (a model built around the description's table). */
function missing(role: string, layer: number): EngineError {
  return EngineError.invalidArgument(`layer ${layer}: the recipe reads ${role}, which it lacks`);
}

/** The attention output projection's bias, where the layer has one. */
function oBias(L: GpuLayer): { b?: GPUBuffer } {
  return L.oBias ? { b: L.oBias } : {};
}

/** A forward's scratch buffers, sized for `capacity` tokens (and logit rows). */
export interface Scratch {
  capacity: number;
  tableCapacity: number;
  index: GPUBuffer;
  ids: GPUBuffer;
  positions: GPUBuffer;
  slots: GPUBuffer;
  tableOffsets: GPUBuffer;
  blockTable: GPUBuffer;
  /** The residual stream [tokens, hidden]. */
  x: GPUBuffer;
  /** A residual branch before its post-norm [tokens, hidden]. */
  branch: GPUBuffer;
  /** The fused q/k/v product [tokens, q + 2kv]. */
  qkv: GPUBuffer;
  /** Rotated q [tokens, q], and attention's output. */
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

/** One step shape's dispatches and the buffers they own (uniforms, split partials). */
export interface Plan {
  body: Dispatch[];
  head: Dispatch[];
  owned: GPUBuffer[];
}

/** Steps of at most this many tokens may split decode attention over the key axis. */
export const SPLIT_MAX_TOKENS = 4;

/** How a step's attention splits the key axis, and the most keys one of its queries may see. */
export interface AttentionSplit {
  splits: number;
  maxKeys: number;
}

/** Bytes of split partials a CPU adapter's forward keeps for prefill through the `rows` kernel. */
export const ROWS_PARTIAL_BYTES = 32 << 20;

/**
 * Key-axis splits of a step's attention. Split-K decode spreads one sequence's keys over many
 * workgroups, which a GPU needs for long contexts: the `tiles` kernel splits decode (up to
 * `SPLIT_MAX_TOKENS` tokens) by the model's context. On a CPU adapter the `rows` kernel gives each
 * thread at most `ROWS_KEYS` keys, which spreads a long context over the cores and keeps
 * lavapipe's loop limiter away: it splits by the keys the step's queries see (`keys`, rounded up
 * to a power of two of splits, so that a plan serves a class of lengths), at most the context's,
 * and a prefill chunk too while its partials fit `partialSlots` (tokens × heads × splits; else the
 * chunk takes the tiles in one pass). `forced` (tests) fixes the count of decode splits.
 */
export function attentionSplit(
  device: GPUDevice,
  tokens: number,
  keys: number,
  context: number,
  forced?: number,
  heads = 0,
  partialSlots = 0,
): AttentionSplit {
  const paths = kernelPaths(device);
  const decode = tokens <= SPLIT_MAX_TOKENS;
  const single = { splits: 1, maxKeys: context };
  if (!paths.splitAttention) return single;
  if (forced !== undefined) return decode ? { splits: forced, maxKeys: context } : single;
  if (paths.attention !== "rows") {
    return decode ? { splits: chooseSplits(context), maxKeys: context } : single;
  }
  const splits = Math.min(rowsSplits(context), 2 ** Math.ceil(Math.log2(rowsSplits(keys))));
  const rows = { splits, maxKeys: Math.min(context, splits * ROWS_KEYS) };
  if (decode || splits === 1) return rows;
  return tokens * heads * splits <= partialSlots ? rows : single;
}

/** Where a plan's token ids come from, and how its decode attention splits. */
export interface PlanOptions {
  /** A token store: the step's `tokens` are indices into it, gathered on the GPU. */
  store?: GPUBuffer;
  /** How decode attention splits (default: as for a query that sees the whole context). */
  split?: AttentionSplit;
}

/**
 * The dispatches of one step shape of `m` over scratch `s`. Every kernel is prepared at once (in
 * order), so the pipelines a new shape needs compile side by side rather than one after another.
 */
export async function buildPlan(
  m: GpuModel,
  s: Scratch,
  tokens: number,
  rows: number,
  options: PlanOptions = {},
): Promise<Plan> {
  const c = m.config;
  const d = m.gpu.device;
  type Part = Promise<Dispatch[] | Dispatch | AttentionDispatch>;
  const body: Part[] = [];
  const head: Part[] = [];
  const H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim;
  if (options.store) {
    body.push(
      prepareGather(d, { store: options.store, index: s.index, ids: s.ids, count: tokens }),
    );
  }
  // The embedding, one dispatch per part of the table (a big vocabulary is split by rows).
  // One scale in the gather: the family's (`embedScale`) times the config's multiplier.
  const embedScale = (c.embedScale ?? 1) * (c.embeddingScale ?? 1);
  let row0 = 0;
  for (const [i, part] of m.embed.parts.entries()) {
    const args = {
      ids: s.ids,
      table: part.buffer,
      out: s.x,
      tokens,
      hidden: H,
      vocab: c.vocabSize,
      rowStart: row0,
      rowEnd: row0 + part.rows,
      ...(embedScale !== 1 ? { scale: embedScale } : {}),
    };
    const label = m.embed.parts.length > 1 ? `embed.${i}` : "embed";
    body.push(
      isFloatDtype(part.dtype)
        ? prepareEmbedding(d, { ...args, dtype: part.dtype }, label)
        : prepareQuantEmbedding(d, { ...args, type: part.dtype }, label),
    );
    row0 += part.rows;
  }
  const linear = (args: Omit<ProductArgs, "m">, label: string, xRows = tokens) =>
    prepareProduct(d, { ...args, m: xRows }, s.linear, label);
  const context = c.maxPositionEmbeddings;
  const { splits, maxKeys } = options.split ?? attentionSplit(d, tokens, context, context);
  // Shared by every layer's split attention where they fit (one layer runs after another).
  const fits = s.partials !== undefined && tokens * c.numHeads * splits <= s.partials.slots;
  const partials = splits > 1 && fits ? { partials: s.partials! } : {};
  const kvDtype = m.kvDtype;
  const branch = c.residualScale !== undefined ? { scale: c.residualScale } : {};
  /**
   * A residual branch, `product` writing it: added to x (scaled by the residual multiplier), or
   * with `postNorm`'s weight stored, RMSNorm'd and added by the norm kernel.
   */
  const residual = (
    l: number,
    name: string,
    postNorm: GPUBuffer | undefined | false,
    product: (y: GPUBuffer, epilogue: "accumulate" | "store") => Part,
  ): Part[] => {
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
      prepareRmsNorm(d, {
        x: s.branch,
        weight: postNorm,
        y: s.x,
        rows: tokens,
        dim: H,
        eps: c.rmsNormEps,
        dtype: "f32",
        accumulate: true,
      }, `L${l}:${name}`),
    ];
  };
  /** The q/k/v product, after the input norm when `norm` is given. */
  const qkv = (l: number, L: GpuLayer, norm?: GPUBuffer): Part =>
    linear({
      x: s.x,
      weight: L.qkv,
      ...(L.qkvBias ? { b: L.qkvBias } : {}),
      y: s.qkv,
      n: Q + 2 * KV,
      k: H,
      ...(norm ? { norm: { weight: norm, eps: c.rmsNormEps } } : {}),
    }, `L${l}:qkv`);
  /** The dispatches of one recipe step of layer `l`. */
  const layerStep = (step: LayerStep, l: number, L: GpuLayer): Part[] => {
    switch (step.op) {
      case "attn_norm_qkv":
        return [L.inputNorm ? qkv(l, L, L.inputNorm) : Promise.reject(missing("inputNorm", l))];
      case "qkv":
        return [qkv(l, L)];
      case "qk_norm": {
        // Per head, or (`projection`) one row of all the heads per token.
        const whole = step.width === "projection";
        const norm = (weight: GPUBuffer | undefined, which: string, heads: number, at: number) =>
          weight === undefined ? Promise.reject(missing(`${which}Norm`, l)) : prepareHeadNorm(d, {
            x: s.qkv,
            weight,
            tokens,
            heads: whole ? 1 : heads,
            headDim: whole ? heads * c.headDim : c.headDim,
            stride: Q + 2 * KV,
            offset: at,
            eps: c.rmsNormEps,
            dtype: "f32",
          }, `L${l}:${which}_norm`);
        return [norm(L.qNorm, "q", c.numHeads, 0), norm(L.kNorm, "k", c.numKvHeads, Q)];
      }
      case "rope":
        return [prepareRopeKv(d, {
          qkv: s.qkv,
          q: s.q,
          positions: s.positions,
          frequencies: windowOf(c, l) > 0 && m.ropeLocalFrequencies
            ? m.ropeLocalFrequencies
            : m.ropeFrequencies,
          slots: s.slots,
          kCache: m.kCache[l]!,
          vCache: m.vCache[l]!,
          tokens,
          heads: c.numHeads,
          kvHeads: c.numKvHeads,
          headDim: c.headDim,
          rotaryDim: layerRotaryDim(c, l),
          rotaryScale: ropeAttentionFactor(c.ropeScaling),
          kvDtype,
        }, `L${l}:rope_kv`)];
      case "attention":
        if (step.sinks && !L.sinks) return [Promise.reject(missing("sinks", l))];
        return [prepareAttention(d, {
          q: s.q,
          kCache: m.kCache[l]!,
          vCache: m.vCache[l]!,
          positions: s.positions,
          tableOffsets: s.tableOffsets,
          blockTable: s.blockTable,
          out: s.attn,
          tokens,
          heads: c.numHeads,
          kvHeads: c.numKvHeads,
          headDim: c.headDim,
          blockSize: m.blockSize,
          splits,
          maxKeys,
          ...partials,
          kvDtype,
          ...(c.attnScale !== undefined ? { scale: c.attnScale } : {}),
          ...(c.attnSoftcap !== undefined ? { softcap: c.attnSoftcap } : {}),
          window: windowOf(c, l),
          ...(step.sinks ? { sinks: L.sinks } : {}),
        }, `L${l}:attention`)];
      case "o_proj_residual":
        return residual(
          l,
          "attnOutNorm",
          step.postNorm === true && L.attnOutNorm,
          (y, epilogue) =>
            linear(
              { x: s.attn, weight: L.o, ...oBias(L), y, n: H, k: Q, epilogue, ...branch },
              `L${l}:o`,
            ),
        );
      case "mlp": {
        const pre = step.preNorm === false ? undefined : L.postNorm;
        if (step.preNorm !== false && pre === undefined) {
          return [Promise.reject(missing("postNorm", l))];
        }
        if (L.gateUp === undefined) return [Promise.reject(missing("gate/up", l))];
        const downW = L.down;
        if (downW === undefined) return [Promise.reject(missing("down", l))];
        return [
          linear({
            x: s.x,
            weight: L.gateUp,
            y: s.act,
            n: c.intermediateSize,
            k: H,
            ...(pre ? { norm: { weight: pre, eps: c.rmsNormEps } } : {}),
            epilogue: step.act === "silu" ? "swiglu" : "geglu",
          }, `L${l}:gate_up`),
          ...residual(
            l,
            "mlpOutNorm",
            step.postNorm === true && L.mlpOutNorm,
            (y, epilogue) =>
              linear({
                x: s.act,
                weight: downW,
                y,
                n: H,
                k: c.intermediateSize,
                epilogue,
                ...branch,
              }, `L${l}:down`),
          ),
        ];
      }
      case "moe_mlp":
        return moeStepParts(moe, step, l, L);
    }
  };
  const moe = { device: d, config: c, x: s.x, scratch: s.moe, tokens, linear };
  const recipe = archOf(c).layer;
  for (let l = 0; l < c.numLayers; l++) {
    const L = m.layers[l]!;
    for (const step of recipe) body.push(...layerStep(step, l, L));
  }
  // The LM head reads the wanted rows of x (copied out after the body) through the final
  // norm. A step without logit rows (a prompt chunk that does not end its prompt) has none.
  if (rows > 0) {
    head.push(linear(
      {
        x: s.rows,
        weight: m.lmHead,
        y: s.logits,
        n: c.vocabSize,
        k: H,
        norm: { weight: m.finalNorm, eps: c.rmsNormEps },
        ...(c.logitScale !== undefined ? { scale: 1 / c.logitScale } : {}),
      },
      "lm_head",
      rows,
    ));
    if (c.finalSoftcap !== undefined) {
      head.push(prepareScaleInPlace(d, {
        x: s.logits,
        count: rows * c.vocabSize,
        op: "softcap",
        value: c.finalSoftcap,
      }, "logit_softcap"));
    }
  }
  const settled = await Promise.allSettled([...body, ...head]);
  const plan: Plan = { body: [], head: [], owned: [] };
  const failed = settled.find((r) => r.status === "rejected");
  settled.forEach((r, i) => {
    if (r.status === "rejected") return;
    const v = r.value;
    const list: (Dispatch & { uniform?: GPUBuffer })[] = "dispatches" in v
      ? v.dispatches
      : Array.isArray(v)
      ? v
      : [v];
    (i < body.length ? plan.body : plan.head).push(...list);
    if ("owned" in v) plan.owned.push(...v.owned);
    else plan.owned.push(...list.flatMap((x) => x.uniform ? [x.uniform] : []));
  });
  if (failed) {
    for (const b of plan.owned) b.destroy();
    throw failed.reason;
  }
  return plan;
}
