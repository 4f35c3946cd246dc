/**
 * Float64 reference of the sampler, written plainly (real sorts, no bisection), the logprobs it
 * reports, and the counter-based RNG the GPU uses, bit for bit.
 */
import { MASKED_LOGIT } from "../../gpu/token_mask_bits.ts";
import {
  bannedByBadWords,
  type History,
  isGreedy,
  MIN_TEMPERATURE,
  type SamplingParams,
} from "../../gpu/kernels/sampling_params.ts";

export { bannedByBadWords, type History, isGreedy, MIN_TEMPERATURE, type SamplingParams };

const pcg = (v: number): number => {
  const state = (Math.imul(v >>> 0, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> ((state >>> 28) + 4)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
};

/** The uniform draw for (seed, step), identical to `rng_uniform` in `shaders/sampling.wgsl`. */
export function rngUniform(seedLo: number, seedHi: number, step: number): number {
  const h = pcg((seedLo ^ pcg((seedHi ^ pcg((step ^ 0x9e3779b9) >>> 0)) >>> 0)) >>> 0);
  return (h >>> 8) * (1 / 16777216);
}

/**
 * Logits after masks, penalties and temperature (greedy: no temperature). A logit at or below
 * {@linkcode MASKED_LOGIT} (guided decoding's bitmask, or -inf) stays -inf, as on the GPU.
 */
export function processedLogits(
  logits: ArrayLike<number>,
  p: SamplingParams,
  h: History,
): Float64Array {
  const V = logits.length;
  const l = Float64Array.from(logits, (v) => (v <= MASKED_LOGIT ? -Infinity : v));
  const seen = new Set(h.tokens);
  const outCount = new Map<number, number>();
  for (const t of h.tokens.slice(h.outputStart)) outCount.set(t, (outCount.get(t) ?? 0) + 1);
  const rep = p.repetition_penalty ?? 1;
  for (let i = 0; i < V; i++) {
    if (seen.has(i) && rep !== 1) l[i] = l[i]! > 0 ? l[i]! / rep : l[i]! * rep;
    const n = outCount.get(i) ?? 0;
    l[i] = l[i]! - (p.frequency_penalty ?? 0) * n - (n > 0 ? p.presence_penalty ?? 0 : 0);
  }
  const allowed = p.allowed ? new Set(p.allowed) : undefined;
  const banned = new Set(p.banned ?? []);
  for (let i = 0; i < V; i++) if ((allowed && !allowed.has(i)) || banned.has(i)) l[i] = -Infinity;
  if (!isGreedy(p)) {
    const t = p.temperature ?? 1;
    for (let i = 0; i < V; i++) l[i] = l[i]! / t;
  }
  return l;
}

/** Max without spreading (a 150k-token row overflows the argument stack). */
function maxOf(v: ArrayLike<number>): number {
  let m = -Infinity;
  for (let i = 0; i < v.length; i++) if (v[i]! > m) m = v[i]!;
  return m;
}

function softmax(l: Float64Array): Float64Array {
  const m = maxOf(l);
  const e = l.map((v) => (v === -Infinity ? 0 : Math.exp(v - m)));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / z);
}

/**
 * The processed logits with every token top-k, top-p and min-p drop set to -inf (HF order: top-k,
 * top-p, min-p; not for greedy). Ties are kept whole: top-k keeps every token equal to the k-th
 * largest (as HF's `scores < kth`), and top-p keeps every token equal to the one where the mass
 * crosses `top_p` (HF sorts without a stable order there; whole tie groups make the result
 * independent of token order).
 */
export function truncatedLogits(
  logits: ArrayLike<number>,
  p: SamplingParams,
  h: History,
): Float64Array {
  const l = processedLogits(logits, p, h);
  const V = l.length;
  if (isGreedy(p)) return l;
  const k = p.top_k ?? 0;
  if (k > 1 && k < V) {
    const kth = [...l].sort((a, b) => b - a)[k - 1]!;
    for (let i = 0; i < V; i++) if (l[i]! < kth) l[i] = -Infinity;
  }
  if ((p.top_p ?? 1) < 1) {
    const probs = softmax(l);
    const order = [...probs.keys()].sort((a, b) => probs[a]! - probs[b]! || a - b);
    let cum = 0;
    const keepFrom = order.findIndex((i) => (cum += probs[i]!) > 1 - p.top_p!);
    const cut = l[order[keepFrom < 0 ? V - 1 : keepFrom]!]!;
    for (let i = 0; i < V; i++) if (l[i]! < cut) l[i] = -Infinity;
  }
  if ((p.min_p ?? 0) > 0) {
    const probs = softmax(l);
    const top = maxOf(probs);
    for (let i = 0; i < V; i++) if (probs[i]! < p.min_p! * top) l[i] = -Infinity;
  }
  return l;
}

/** The distribution the next token is drawn from (greedy: all on the argmax). */
export function referenceDistribution(
  logits: ArrayLike<number>,
  p: SamplingParams,
  h: History,
): Float64Array {
  return referenceStep(logits, p, h).probs;
}

/**
 * What logprobs report, for the sampled token and the top alternatives alike (vLLM's
 * `processed_logprobs`): the log-probabilities of the distribution the token is drawn from,
 * i.e. the log-softmax of the logits after masks, penalties and temperature, over the tokens
 * top-k, top-p and min-p keep (-inf for every other). Temperature 0 draws from a point mass, so
 * it reports the distribution at temperature 1 after masks and penalties, untruncated; top_k 1
 * (at a temperature above 0) the argmax alone (0 there). Every token -inf when none is left.
 */
export function referenceLogprobs(
  logits: ArrayLike<number>,
  p: SamplingParams,
  h: History,
): Float64Array {
  return referenceStep(logits, p, h).logprobs;
}

/** {@linkcode referenceDistribution} and {@linkcode referenceLogprobs} at once. */
export function referenceStep(
  logits: ArrayLike<number>,
  p: SamplingParams,
  h: History,
): { probs: Float64Array; logprobs: Float64Array } {
  const l = truncatedLogits(logits, p, h);
  if (!isGreedy(p)) return { probs: softmax(l), logprobs: logSoftmax(l) };
  const best = referenceArgmax(l);
  const probs = new Float64Array(l.length);
  probs[best] = 1;
  if ((p.temperature ?? 1) < MIN_TEMPERATURE) return { probs, logprobs: logSoftmax(l) };
  const logprobs = new Float64Array(l.length).fill(-Infinity);
  if (l[best]! > -Infinity) logprobs[best] = 0;
  return { probs, logprobs };
}

/**
 * The `n` most likely tokens of `logprobs` (ties to the lowest id), leaving out every -inf one:
 * fewer than `n` when fewer can be drawn.
 */
export function referenceTop(
  logprobs: ArrayLike<number>,
  n: number,
): { ids: number[]; logprobs: number[] } {
  const ids = [...Array(logprobs.length).keys()]
    .filter((i) => logprobs[i]! > -Infinity)
    .sort((a, b) => logprobs[b]! - logprobs[a]! || a - b)
    .slice(0, Math.max(0, n));
  return { ids, logprobs: ids.map((i) => logprobs[i]!) };
}

/** Argmax, ties to the lowest id. */
export function referenceArgmax(v: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i]! > v[best]!) best = i;
  return best;
}

/** Inverse-CDF draw in token-id order with uniform `u`; never a zero-probability token. */
export function referenceDraw(probs: ArrayLike<number>, u: number): number {
  let total = 0;
  for (let i = 0; i < probs.length; i++) total += probs[i]!;
  const target = u * total;
  let acc = 0, last = -1;
  for (let i = 0; i < probs.length; i++) {
    if (probs[i]! <= 0) continue;
    acc += probs[i]!;
    last = i;
    if (acc > target) return i;
  }
  return last;
}

/** log_softmax of `logits`; -inf stays -inf, and every entry is -inf when all are. */
export function logSoftmax(logits: ArrayLike<number>): Float64Array {
  const m = maxOf(logits);
  if (m === -Infinity) return new Float64Array(logits.length).fill(-Infinity);
  let z = 0;
  for (let i = 0; i < logits.length; i++) z += Math.exp(logits[i]! - m);
  const lse = m + Math.log(z);
  return Float64Array.from(logits, (v) => v - lse);
}
