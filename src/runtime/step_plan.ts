/**
 * One step's dispatches, as a `Forward` caches them per step shape (tokens, logit rows): each
 * layer's recipe (`ArchDescription.layer`, or its kind's in a hybrid family) compiled step by step, one step compiler per op
 * (`steps/table.ts`, as `reference/layer.ts` interprets the same ops in float64).
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
 * (`gpu/kernels/moe.ts`), at every step shape (`steps/moe.ts`).
 * Prefill shapes run the same steps with the norms, adds and SwiGLU as their own dispatches
 * around the tiled products. Then the rows whose logits are wanted are copied out of the
 * residual stream and multiplied by the LM head with the final norm folded in (`steps/embedding.ts`).
 *
 * The config's attention knobs (`attention_knobs.ts`) go to the kernels: the embedding scale in
 * the gather, the final logit soft-cap as an in-place pass, each layer's window and RoPE base,
 * the attention scale and soft-cap; a recipe's attention sinks and o bias, and its experts'
 * activation and biases, to theirs. A step with a post-norm (`o_proj_residual` / `mlp` with
 * `postNorm`) writes its product to `branch`, and one RMSNorm dispatch adds the normed rows to x
 * (`steps/residual.ts`).
 */
import type { Dispatch } from "../gpu/dispatch.ts";
import { chooseSplits, ROWS_KEYS, rowsSplits } from "../gpu/kernels/attention.ts";
import { prepareProduct, type ProductArgs } from "../gpu/product/product.ts";
import { kernelPaths } from "../gpu/paths.ts";
import { layerRecipe } from "../model/layer_kinds.ts";
import type { GpuModel } from "./gpu_model.ts";
import type { Part, PlanContext, Scratch } from "./steps/context.ts";
import { embedParts, headParts } from "./steps/embedding.ts";
import { compileStep } from "./steps/table.ts";

export type { MoeScratch, Scratch } from "./steps/context.ts";

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

/** The context one step shape of `m` over scratch `s` is compiled in (`steps/context.ts`). */
function planContext(
  m: GpuModel,
  s: Scratch,
  tokens: number,
  options: PlanOptions,
): PlanContext {
  const c = m.config;
  const d = m.gpu.device;
  const linear = (args: Omit<ProductArgs, "m">, label: string, xRows = tokens) =>
    prepareProduct(d, { ...args, m: xRows }, s.linear, label);
  const context = c.maxPositionEmbeddings;
  const { splits, maxKeys } = options.split ?? attentionSplit(d, tokens, context, context);
  // Shared by every layer's split attention where they fit (one layer runs after another).
  const fits = s.partials !== undefined && tokens * c.numHeads * splits <= s.partials.slots;
  return {
    m,
    c,
    d,
    s,
    tokens,
    H: c.hiddenSize,
    Q: c.numHeads * c.headDim,
    KV: c.numKvHeads * c.headDim,
    splits,
    maxKeys,
    partials: splits > 1 && fits ? { partials: s.partials! } : {},
    kvDtype: m.kvDtype,
    branch: c.residualScale !== undefined ? { scale: c.residualScale } : {},
    linear,
  };
}

/**
 * The dispatches of one step shape of `m` over scratch `s`: the gather and embedding, each
 * layer's recipe step by step (`steps/table.ts`), then the head. Every kernel is prepared at once
 * (in order), so the pipelines a new shape needs compile side by side rather than one after
 * another.
 */
export async function buildPlan(
  m: GpuModel,
  s: Scratch,
  tokens: number,
  rows: number,
  options: PlanOptions = {},
): Promise<Plan> {
  const x = planContext(m, s, tokens, options);
  const body: Part[] = embedParts(x, options.store);
  for (let l = 0; l < m.config.numLayers; l++) {
    const L = m.layers[l]!;
    for (const step of layerRecipe(m.config, l)) body.push(...compileStep(x, step, l, L));
  }
  return await settle(body, headParts(x, rows));
}

/** The plan of the prepared parts, or (any refused) the first refusal, the others' buffers freed. */
async function settle(body: Part[], head: Part[]): Promise<Plan> {
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
