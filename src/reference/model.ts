/**
 * A float64 forward pass of a whole model on the CPU, on the weights as stored (dequantized for
 * GGUF): the model-level counterpart of the kernel references in `src/reference/kernels/`, and what
 * `deno task reference` computes reference logits with. The embedding, then each layer's recipe
 * (`ArchDescription.layer`, interpreted by `reference_layer.ts`), the final norm and the LM head
 * (tied or not). Plain Float64Array loops with preallocated scratch; a KV cache per run, so
 * greedy steps cost one token each.
 */
import { EngineError } from "../contract/errors.ts";
import type { ModelConfig } from "../model/config.ts";
import type { PromptLogits, ReferencePrompt } from "./verify.ts";
import { ropeInvFreq } from "../model/rope.ts";
import type { ExpertMatrices } from "./kernels/moe.ts";
import { llamaCppRoundedInputs, type RoundedInput, roundQ8_0 } from "./rounding.ts";
import { tensorValues } from "./tensor_values.ts";
import type { LayerWeights, ModelWeights, WeightInfo } from "../model/weights.ts";
import type { LayerRole, LayerStep } from "../model/arch/mod.ts";
import { hasKv, layerRecipe } from "../model/layer_kinds.ts";
import { freshState, type RecurrentState } from "./recurrent.ts";
import {
  layerScratch,
  type LayerValues,
  linear,
  rmsNorm,
  runStep,
  type TestMutation,
} from "./layer.ts";

export type { TestMutation };

/** Greedy decoding after a prompt: each chosen token, its margin and the logits that chose it. */
export interface GreedyResult {
  tokens: number[];
  /** Top-1 minus top-2 logit at each step. */
  margins: number[];
  /** `stepLogits[0]` are the logits at the last prompt position. */
  stepLogits: Float64Array[];
}

/** Keys and values of every layer for the tokens run so far ([positions, kvHeads * headDim]). */
class KvCache {
  k: Float64Array[] = [];
  v: Float64Array[] = [];
  length = 0;
  /** Each recurrent layer's state (undefined at attention layers). */
  readonly states: (RecurrentState | undefined)[];
  constructor(readonly layers: number, readonly width: number, config: ModelConfig) {
    this.states = Array.from(
      { length: layers },
      (_, l) => hasKv(config, l) ? undefined : freshState(config, l),
    );
  }

  reserve(total: number): void {
    const have = this.k[0] ? this.k[0].length / this.width : 0;
    if (total <= have) return;
    const size = Math.max(total, 2 * have) * this.width;
    const grow = (a: Float64Array | undefined) => {
      const b = new Float64Array(size);
      if (a) b.set(a);
      return b;
    };
    for (let l = 0; l < this.layers; l++) {
      this.k[l] = grow(this.k[l]);
      this.v[l] = grow(this.v[l]);
    }
  }
}

function argmaxMargin(v: Float64Array): [number, number] {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i]! > v[best]!) best = i;
  let second = -Infinity;
  for (let i = 0; i < v.length; i++) if (i !== best && v[i]! > second) second = v[i]!;
  return [best, v.length > 1 ? v[best]! - second : Infinity];
}

/** Stacked q/k/v and gate/up tensors read as views of their parts. */
function unstack(c: ModelConfig, out: { [R in LayerRole]?: Float64Array }): void {
  const H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim;
  const F = c.intermediateSize;
  if (out.qkv) {
    out.q = out.qkv.subarray(0, Q * H);
    out.k = out.qkv.subarray(Q * H, (Q + KV) * H);
    out.v = out.qkv.subarray((Q + KV) * H);
  }
  if (out.gateUp) {
    out.gate = out.gateUp.subarray(0, F * H);
    out.up = out.gateUp.subarray(F * H);
  }
}

/** `context` checked: a whole number of positions from 1 to the model's context. */
function referenceContext(config: ModelConfig, context: number | undefined): number {
  const max = config.maxPositionEmbeddings;
  if (context === undefined) return max;
  if (!Number.isInteger(context) || context < 1 || context > max) {
    throw EngineError.invalidArgument(
      `reference model: context ${context} is not a whole number from 1 to the model's ${max}`,
    );
  }
  return context;
}

/** Options of {@linkcode ReferenceModel.load}. */
export interface ReferenceOptions {
  /**
   * The most positions one sequence may reach (default, and at most: the model's context): the
   * engine's context this reference stands for (`GpuModel.context`); LongRoPE chooses its
   * factors by it (`ropeFactorList`).
   */
  context?: number;
  /** TEST ONLY: plant a {@linkcode TestMutation}; never set outside tests. */
  testMutation?: TestMutation;
  /**
   * TEST ONLY: run this layer recipe instead of the family's (an ablation: the family less one
   * step shows that step matters); never set outside tests.
   */
  testRecipe?:
    | readonly LayerStep[]
    | ((layer: number, own: readonly LayerStep[]) => readonly LayerStep[]);
  /**
   * TEST ONLY: round the input of each product over Q8_0 or MXFP4 weights to Q8_0 blocks, as
   * llama.cpp's CPU build does (`reference_rounding.ts`), to hold the reference against
   * llama.cpp's logits on such a file; never set outside tests.
   */
  testLlamaCppRounding?: boolean;
}

export class ReferenceModel {
  readonly invFreq: Float64Array;
  /** RoPE frequencies of sliding-window layers with a base of their own (else `invFreq`). */
  readonly localInvFreq: Float64Array;
  /** A test's recipe for every layer, else each layer's own (`layerRecipe`). */
  readonly #recipe: ReferenceOptions["testRecipe"];

  private constructor(
    readonly config: ModelConfig,
    private readonly embed: Float64Array,
    private readonly layers: LayerValues[],
    private readonly norm: Float64Array,
    private readonly lmHead: Float64Array,
    private readonly mutation: TestMutation | undefined,
    recipe: ReferenceOptions["testRecipe"],
    private readonly rounded: ReadonlySet<RoundedInput> = new Set(),
    /** The most positions one sequence may reach ({@linkcode ReferenceOptions.context}). */
    readonly context: number = config.maxPositionEmbeddings,
  ) {
    this.invFreq = ropeInvFreq(
      config.rotaryDim ?? config.headDim,
      config.ropeTheta,
      config.ropeScaling,
      context,
    );
    this.localInvFreq = config.ropeLocalTheta === undefined
      ? this.invFreq
      : ropeInvFreq(config.headDim, config.ropeLocalTheta, { type: "default" });
    this.#recipe = recipe;
  }

  /** Read every tensor of `weights` (a tensor used twice, like a tied LM head, once). */
  static async load(
    config: ModelConfig,
    weights: ModelWeights<WeightInfo>,
    options: ReferenceOptions = {},
  ): Promise<ReferenceModel> {
    const read = new Map<WeightInfo, Promise<Float64Array>>();
    const values = (t: WeightInfo) => {
      let p = read.get(t);
      if (p === undefined) read.set(t, p = tensorValues(t));
      return p;
    };
    const layers: LayerValues[] = [];
    for (const l of weights.layers) {
      const { experts, ...rest } = l as LayerWeights<WeightInfo>;
      const out: { -readonly [R in LayerRole]?: Float64Array } = {};
      for (const [role, t] of Object.entries(rest)) {
        out[role as LayerRole] = await values(t);
      }
      const matrices: ExpertMatrices[] = [];
      for (const e of experts ?? []) {
        const m: Record<string, Float64Array> = {};
        for (const [role, t] of Object.entries(e)) m[role] = await values(t);
        matrices.push(m as unknown as ExpertMatrices);
      }
      unstack(config, out);
      layers.push(experts ? { ...out, experts: matrices } : out);
    }
    return new ReferenceModel(
      config,
      await values(weights.embed),
      layers,
      await values(weights.norm),
      await values(weights.lmHead),
      options.testMutation,
      options.testRecipe,
      options.testLlamaCppRounding ? llamaCppRoundedInputs(weights) : undefined,
      referenceContext(config, options.context),
    );
  }

  /** The logits at every position of `tokens`, run causally from position 0. */
  logits(tokens: readonly number[]): Float64Array[] {
    const cache = this.#cache();
    cache.reserve(tokens.length);
    return this.#forward(tokens, cache);
  }

  /** `steps` greedy tokens after the prompt `tokens` (no stop on EOS). */
  greedy(
    tokens: readonly number[],
    steps: number,
  ): GreedyResult & { promptLogits: Float64Array[] } {
    if (!Number.isInteger(steps) || steps < 0) {
      throw EngineError.invalidArgument(`greedy steps: expected an integer >= 0, got ${steps}`);
    }
    const cache = this.#cache();
    cache.reserve(tokens.length + steps);
    const promptLogits = this.#forward(tokens, cache);
    const out: GreedyResult = { tokens: [], margins: [], stepLogits: [] };
    let last = promptLogits[promptLogits.length - 1]!;
    for (let s = 0; s < steps; s++) {
      const [token, margin] = argmaxMargin(last);
      out.tokens.push(token);
      out.margins.push(margin);
      out.stepLogits.push(last);
      if (s + 1 < steps) last = this.#forward([token], cache)[0]!;
    }
    return { ...out, promptLogits };
  }

  /** One prompt in the fixtures' `reference.json` form (`steps` greedy tokens). */
  prompt(tokens: readonly number[], steps: number): ReferencePrompt {
    const g = this.greedy(tokens, steps);
    return {
      input_ids: [...tokens],
      logits: g.promptLogits.map((row) => [...row]),
      greedy_tokens: g.tokens,
      greedy_margins: g.margins,
      greedy_step_logits: g.stepLogits.map((row) => [...row]),
    };
  }

  /**
   * What `verify` compares with `p`: the logits at every prompt position and at each greedy
   * step, teacher-forced with `p`'s greedy tokens (one causal pass over the prompt and them).
   */
  teacherForced(p: ReferencePrompt): PromptLogits {
    const steps = p.greedy_tokens.length;
    const T = p.input_ids.length;
    const rows = this.logits([...p.input_ids, ...p.greedy_tokens.slice(0, Math.max(0, steps - 1))]);
    return { prompt: rows.slice(0, T), steps: rows.slice(T - 1, T - 1 + steps) };
  }

  /**
   * An incremental run: each call runs `tokens` after those of the calls before it (one KV cache
   * kept between calls) and returns their logits, so a sampled loop costs one token a step.
   */
  session(): (tokens: readonly number[]) => Float64Array[] {
    const cache = this.#cache();
    return (tokens) => {
      cache.reserve(cache.length + tokens.length);
      return this.#forward(tokens, cache);
    };
  }

  #cache(): KvCache {
    const c = this.config;
    return new KvCache(c.numLayers, c.numKvHeads * c.headDim, c);
  }

  #check(tokens: readonly number[], cache: KvCache): void {
    const { vocabSize } = this.config;
    if (tokens.length === 0) throw EngineError.invalidArgument("reference model: no tokens");
    for (const id of tokens) {
      if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
        throw EngineError.invalidArgument(
          `reference model: token ${id} is outside the vocabulary (0..${vocabSize - 1})`,
        );
      }
    }
    if (cache.length + tokens.length > this.context) {
      throw EngineError.invalidArgument(
        `reference model: ${
          cache.length + tokens.length
        } positions exceed the context ${this.context}`,
      );
    }
  }

  /** Run `tokens` at the positions after those in `cache`, appending their keys and values. */
  #forward(tokens: readonly number[], cache: KvCache): Float64Array[] {
    this.#check(tokens, cache);
    const c = this.config;
    const T = tokens.length, H = c.hiddenSize;
    const start = cache.length;
    const s = layerScratch(c, this.invFreq, T, start, this.localInvFreq);
    const { x, xn } = s;
    for (let t = 0; t < T; t++) {
      x.set(this.embed.subarray(tokens[t]! * H, (tokens[t]! + 1) * H), t * H);
    }
    if (c.embedScale !== undefined) { for (let i = 0; i < T * H; i++) x[i] = x[i]! * c.embedScale; }
    if (c.embeddingScale !== undefined) {
      for (let i = 0; i < T * H; i++) x[i] = x[i]! * c.embeddingScale;
    }
    for (const [l, w] of this.layers.entries()) {
      const ctx = {
        c,
        w,
        kCache: cache.k[l]!,
        vCache: cache.v[l]!,
        mutation: this.mutation,
        layer: l,
        ...(this.rounded.size > 0 ? { rounded: this.rounded } : {}),
        ...(cache.states[l] ? { state: cache.states[l] } : {}),
      };
      const own = layerRecipe(c, l), test = this.#recipe;
      const recipe = test === undefined ? own : typeof test === "function" ? test(l, own) : test;
      for (const step of recipe) runStep(step, s, ctx);
    }
    cache.length = start + T;
    rmsNorm(x, T, this.norm, H, c.rmsNormEps, xn);
    const V = c.vocabSize;
    const logits = new Float64Array(T * V);
    const head = this.rounded.has("lmHead") ? roundQ8_0(xn, H) : xn;
    linear(head, T, this.lmHead, undefined, V, H, logits);
    if (c.logitScale !== undefined) {
      for (let i = 0; i < T * V; i++) logits[i] = logits[i]! / c.logitScale;
    }
    const cap = c.finalSoftcap;
    if (cap !== undefined) {
      for (let i = 0; i < T * V; i++) logits[i] = cap * Math.tanh(logits[i]! / cap);
    }
    return Array.from({ length: T }, (_, t) => logits.subarray(t * V, (t + 1) * V));
  }
}
