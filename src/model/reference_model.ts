/**
 * A float64 forward pass of a whole Llama/Mistral/Qwen2 model on the CPU, on the weights as
 * stored (dequantized for GGUF): the model-level counterpart of the kernel references in
 * `src/gpu/reference/`, and what `deno task reference` computes reference logits with. HF's
 * conventions throughout: RMSNorm, q/k/v with optional biases, rotate-half RoPE with the
 * config's scaling, grouped-query causal attention, SwiGLU, final norm, LM head (tied or not).
 * Plain Float64Array loops with preallocated scratch; a KV cache per run, so greedy steps cost
 * one token each.
 */
import { EngineError } from "../contract/errors.ts";
import type { ModelConfig } from "./config.ts";
import type { PromptLogits, ReferencePrompt } from "./verify.ts";
import { ropeInvFreq } from "./rope.ts";
import { tensorValues } from "./tensor_values.ts";
import type { ModelWeights, WeightInfo } from "./weights.ts";

interface LayerValues {
  inputNorm: Float64Array;
  q: Float64Array;
  k: Float64Array;
  v: Float64Array;
  o: Float64Array;
  qBias: Float64Array | undefined;
  kBias: Float64Array | undefined;
  vBias: Float64Array | undefined;
  postNorm: Float64Array;
  gate: Float64Array;
  up: Float64Array;
  down: Float64Array;
}

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
  constructor(readonly layers: number, readonly width: number) {}

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

/** y[t, n] = sum_k x[t, k] W[n, k] + b[n] over `rows` rows; W is [n, k] row-major. */
function linear(
  x: Float64Array,
  rows: number,
  w: Float64Array,
  b: Float64Array | undefined,
  n: number,
  k: number,
  y: Float64Array,
): void {
  for (let t = 0; t < rows; t++) {
    const xo = t * k;
    for (let j = 0; j < n; j++) {
      const wo = j * k;
      let acc = 0;
      for (let i = 0; i < k; i++) acc += x[xo + i]! * w[wo + i]!;
      y[t * n + j] = b === undefined ? acc : acc + b[j]!;
    }
  }
}

function rmsNorm(
  x: Float64Array,
  rows: number,
  w: Float64Array,
  dim: number,
  eps: number,
  y: Float64Array,
): void {
  for (let t = 0; t < rows; t++) {
    const o = t * dim;
    let ss = 0;
    for (let d = 0; d < dim; d++) ss += x[o + d]! * x[o + d]!;
    const scale = 1 / Math.sqrt(ss / dim + eps);
    for (let d = 0; d < dim; d++) y[o + d] = w[d]! * (x[o + d]! * scale);
  }
}

/**
 * `s[0..n)` ← softmax(`s[0..n)`), in float64 with the row max subtracted; `f32NoMax` is the
 * `softmax-without-max-f32` test mutation: every step rounded to f32 and no max subtracted, so
 * a score above ln(f32 max) ≈ 88.72 makes exp overflow to +Infinity and the row NaN.
 */
function softmax(s: Float64Array, n: number, f32NoMax: boolean): void {
  let max = -Infinity, sum = 0;
  if (f32NoMax) {
    for (let j = 0; j < n; j++) {
      sum = Math.fround(sum + (s[j] = Math.fround(Math.exp(Math.fround(s[j]!)))));
    }
    for (let j = 0; j < n; j++) s[j] = Math.fround(s[j]! / sum);
    return;
  }
  for (let j = 0; j < n; j++) max = Math.max(max, s[j]!);
  for (let j = 0; j < n; j++) sum += s[j] = Math.exp(s[j]! - max);
  for (let j = 0; j < n; j++) s[j] = s[j]! / sum;
}

function argmaxMargin(v: Float64Array): [number, number] {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i]! > v[best]!) best = i;
  let second = -Infinity;
  for (let i = 0; i < v.length; i++) if (i !== best && v[i]! > second) second = v[i]!;
  return [best, v.length > 1 ? v[best]! - second : Infinity];
}

/**
 * TEST ONLY: an error planted in the reference pass, so that tests can show `verify` rejects a
 * model that makes it (`src/model/mutation_test.ts`). Nothing outside tests sets one.
 * - `mask-off-by-one`: the causal mask shifted by one, each prompt position also attending to
 *   the next;
 * - `softmax-without-max-f32`: attention's softmax computed in f32 without subtracting the row
 *   max first (see {@linkcode softmax}).
 */
export type TestMutation = "mask-off-by-one" | "softmax-without-max-f32";

/** Options of {@linkcode ReferenceModel.load}. */
export interface ReferenceOptions {
  /** TEST ONLY: plant a {@linkcode TestMutation}; never set outside tests. */
  testMutation?: TestMutation;
}

export class ReferenceModel {
  readonly invFreq: Float64Array;

  private constructor(
    readonly config: ModelConfig,
    private readonly embed: Float64Array,
    private readonly layers: LayerValues[],
    private readonly norm: Float64Array,
    private readonly lmHead: Float64Array,
    private readonly mutation: TestMutation | undefined,
  ) {
    this.invFreq = ropeInvFreq(config.headDim, config.ropeTheta, config.ropeScaling);
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
    const opt = (t: WeightInfo | undefined) => t === undefined ? undefined : values(t);
    const layers: LayerValues[] = [];
    for (const l of weights.layers) {
      layers.push({
        inputNorm: await values(l.inputNorm),
        q: await values(l.q),
        k: await values(l.k),
        v: await values(l.v),
        o: await values(l.o),
        qBias: await opt(l.qBias),
        kBias: await opt(l.kBias),
        vBias: await opt(l.vBias),
        postNorm: await values(l.postNorm),
        gate: await values(l.gate),
        up: await values(l.up),
        down: await values(l.down),
      });
    }
    return new ReferenceModel(
      config,
      await values(weights.embed),
      layers,
      await values(weights.norm),
      await values(weights.lmHead),
      options.testMutation,
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

  #cache(): KvCache {
    return new KvCache(this.config.numLayers, this.config.numKvHeads * this.config.headDim);
  }

  #check(tokens: readonly number[], cache: KvCache): void {
    const { vocabSize, maxPositionEmbeddings } = this.config;
    if (tokens.length === 0) throw EngineError.invalidArgument("reference model: no tokens");
    for (const id of tokens) {
      if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
        throw EngineError.invalidArgument(
          `reference model: token ${id} is outside the vocabulary (0..${vocabSize - 1})`,
        );
      }
    }
    if (cache.length + tokens.length > maxPositionEmbeddings) {
      throw EngineError.invalidArgument(
        `reference model: ${
          cache.length + tokens.length
        } positions exceed the model's ${maxPositionEmbeddings}`,
      );
    }
  }

  /** Run `tokens` at the positions after those in `cache`, appending their keys and values. */
  #forward(tokens: readonly number[], cache: KvCache): Float64Array[] {
    this.#check(tokens, cache);
    const c = this.config;
    const T = tokens.length, H = c.hiddenSize, D = c.headDim, F = c.intermediateSize;
    const heads = c.numHeads, kvHeads = c.numKvHeads, group = heads / kvHeads;
    const qDim = heads * D, kvDim = kvHeads * D, half = D / 2;
    const start = cache.length;
    const x = new Float64Array(T * H);
    for (let t = 0; t < T; t++) {
      x.set(this.embed.subarray(tokens[t]! * H, (tokens[t]! + 1) * H), t * H);
    }
    const xn = new Float64Array(T * H), proj = new Float64Array(T * H);
    const q = new Float64Array(T * qDim), k = new Float64Array(T * kvDim);
    const v = new Float64Array(T * kvDim), attn = new Float64Array(T * qDim);
    const gate = new Float64Array(T * F), up = new Float64Array(T * F);
    const scores = new Float64Array(start + T);
    const cos = new Float64Array(T * half), sin = new Float64Array(T * half);
    for (let t = 0; t < T; t++) {
      for (let i = 0; i < half; i++) {
        const a = (start + t) * this.invFreq[i]!;
        cos[t * half + i] = Math.cos(a);
        sin[t * half + i] = Math.sin(a);
      }
    }
    const rope = (buf: Float64Array, nHeads: number) => {
      for (let t = 0; t < T; t++) {
        for (let h = 0; h < nHeads; h++) {
          const o = (t * nHeads + h) * D;
          for (let i = 0; i < half; i++) {
            const x1 = buf[o + i]!, x2 = buf[o + i + half]!;
            const cs = cos[t * half + i]!, sn = sin[t * half + i]!;
            buf[o + i] = x1 * cs - x2 * sn;
            buf[o + i + half] = x2 * cs + x1 * sn;
          }
        }
      }
    };
    const scale = 1 / Math.sqrt(D);
    for (const [l, w] of this.layers.entries()) {
      rmsNorm(x, T, w.inputNorm, H, c.rmsNormEps, xn);
      linear(xn, T, w.q, w.qBias, qDim, H, q);
      linear(xn, T, w.k, w.kBias, kvDim, H, k);
      linear(xn, T, w.v, w.vBias, kvDim, H, v);
      rope(q, heads);
      rope(k, kvHeads);
      const kc = cache.k[l]!, vc = cache.v[l]!;
      kc.set(k, start * kvDim);
      vc.set(v, start * kvDim);
      attn.fill(0);
      for (let t = 0; t < T; t++) {
        // The mutated mask lets each prompt position see the next one too.
        const keys = this.mutation === "mask-off-by-one"
          ? Math.min(start + t + 2, start + T)
          : start + t + 1;
        for (let h = 0; h < heads; h++) {
          const qo = (t * heads + h) * D, kvo = Math.floor(h / group) * D;
          for (let j = 0; j < keys; j++) {
            const ko = j * kvDim + kvo;
            let dot = 0;
            for (let d = 0; d < D; d++) dot += q[qo + d]! * kc[ko + d]!;
            scores[j] = dot * scale;
          }
          softmax(scores, keys, this.mutation === "softmax-without-max-f32");
          for (let j = 0; j < keys; j++) {
            const p = scores[j]!, vo = j * kvDim + kvo;
            for (let d = 0; d < D; d++) attn[qo + d] = attn[qo + d]! + p * vc[vo + d]!;
          }
        }
      }
      linear(attn, T, w.o, undefined, H, qDim, proj);
      for (let i = 0; i < T * H; i++) x[i] = x[i]! + proj[i]!;
      rmsNorm(x, T, w.postNorm, H, c.rmsNormEps, xn);
      linear(xn, T, w.gate, undefined, F, H, gate);
      linear(xn, T, w.up, undefined, F, H, up);
      for (let i = 0; i < T * F; i++) {
        const g = gate[i]!;
        gate[i] = (g / (1 + Math.exp(-g))) * up[i]!;
      }
      linear(gate, T, w.down, undefined, H, F, proj);
      for (let i = 0; i < T * H; i++) x[i] = x[i]! + proj[i]!;
    }
    cache.length = start + T;
    rmsNorm(x, T, this.norm, H, c.rmsNormEps, xn);
    const V = c.vocabSize;
    const logits = new Float64Array(T * V);
    linear(xn, T, this.lmHead, undefined, V, H, logits);
    return Array.from({ length: T }, (_, t) => logits.subarray(t * V, (t + 1) * V));
  }
}
