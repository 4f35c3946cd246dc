/**
 * A float64 generation loop over the same model as the engine, written apart from the engine's
 * sampler: the model's float64 logits (`ReferenceModel.session`) → repetition penalty over prompt
 * and output, presence and frequency penalties over the OUTPUT only (vLLM's and OpenAI's
 * semantics, as `SamplingOptions` documents them) → `allowed_token_ids`, a guide's allowed
 * tokens, and EOS and stop tokens banned while fewer than `min_tokens` are out → temperature →
 * top-k, top-p, min-p (in that order, on the tempered distribution) → the draw: inverse CDF in
 * token-id order at the documented counter-based uniform (`rngUniform(seed, output index)`), so
 * seeded draws are reproduced exactly. Logprobs are those of the distribution drawn from
 * (temperature 0: the distribution at temperature 1 after penalties and masks, untruncated), as
 * Kiln documents them. A {@linkcode RefMutation} plants one known engine bug, for the tests that
 * show their check rejects it.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import type { LLMEngineOutput, PreprocessedRequest } from "../../src/contract/types.ts";
import type { ReferenceModel } from "../../src/reference/model.ts";
import { rngUniform } from "../../src/reference/kernels/sampling.ts";

/** A planted engine bug the reference can reproduce. */
export type RefMutation =
  | "penalties-count-prompt"
  | "min-tokens-one-too-long"
  | "logprobs-untempered"
  | "min-p-before-temperature";

/** One generated token as the reference draws it. */
export interface RefStep {
  token: number;
  logprob: number;
  /** The `logprobs` most likely tokens (ties to the lowest id), drawable ones only. */
  top: { ids: number[]; logprobs: number[] };
  /** Greedy: top-1 minus top-2 processed logit; sampled: distance of `u` to a CDF edge. */
  margin: number;
}

/** The reference's whole output: streamed tokens (EOS and hidden stop tokens left out). */
export interface RefResult {
  tokens: number[];
  finish: "eos" | "stop" | "length";
  steps: RefStep[];
}

/** What else shapes the output: a guide's allowed tokens after `output`, a planted bug. */
export interface RefOptions {
  guide?: (output: readonly number[]) => readonly number[];
  mutation?: RefMutation;
}

const MIN_TEMPERATURE = 1e-5;

function logSoftmax(l: Float64Array): Float64Array {
  let m = -Infinity;
  for (const v of l) if (v > m) m = v;
  if (m === -Infinity) return l.map(() => -Infinity);
  let z = 0;
  for (const v of l) z += Math.exp(v - m);
  const lse = m + Math.log(z);
  return l.map((v) => v - lse);
}

function topOf(lp: Float64Array, n: number): { ids: number[]; logprobs: number[] } {
  const ids = [...lp.keys()].filter((i) => lp[i]! > -Infinity)
    .sort((a, b) => lp[b]! - lp[a]! || a - b).slice(0, n);
  return { ids, logprobs: ids.map((i) => lp[i]!) };
}

/** Penalties and bans on one row of logits (a copy). */
function penalized(
  logits: Float64Array,
  req: PreprocessedRequest,
  prompt: readonly number[],
  output: readonly number[],
  o: RefOptions,
): Float64Array {
  const s = req.sampling_options, l = Float64Array.from(logits);
  const rep = s.repetition_penalty ?? 1;
  for (const t of new Set([...prompt, ...output])) {
    l[t] = l[t]! > 0 ? l[t]! / rep : l[t]! * rep;
  }
  const counted = o.mutation === "penalties-count-prompt" ? [...prompt, ...output] : output;
  const count = new Map<number, number>();
  for (const t of counted) count.set(t, (count.get(t) ?? 0) + 1);
  for (const [t, n] of count) {
    l[t] = l[t]! - (s.frequency_penalty ?? 0) * n - (s.presence_penalty ?? 0);
  }
  const allowed = [
    s.allowed_token_ids,
    o.guide?.(output),
  ].filter((a): a is readonly number[] => a !== undefined).map((a) => new Set(a));
  for (let i = 0; i < l.length; i++) if (allowed.some((a) => !a.has(i))) l[i] = -Infinity;
  const min = (req.stop_conditions.min_tokens ?? 0) +
    (o.mutation === "min-tokens-one-too-long" ? 1 : 0);
  if (output.length < min) {
    const stop = req.stop_conditions;
    for (
      const t of [
        ...(stop.ignore_eos ? [] : req.eos_token_ids),
        ...(stop.stop_token_ids ?? []),
        ...(stop.stop_token_ids_hidden ?? []),
      ]
    ) l[t] = -Infinity;
  }
  return l;
}

/** Top-k, top-p then min-p on tempered logits `l` (in place); `minPOn`: the row min-p reads. */
function truncate(l: Float64Array, req: PreprocessedRequest, minPOn: Float64Array): void {
  const s = req.sampling_options, V = l.length;
  const k = s.top_k ?? 0;
  if (k > 0 && k < V) {
    const kth = [...l].sort((a, b) => b - a)[k - 1]!;
    for (let i = 0; i < V; i++) if (l[i]! < kth) l[i] = -Infinity;
  }
  if ((s.top_p ?? 1) < 1) {
    const p = logSoftmax(l).map(Math.exp);
    const order = [...p.keys()].sort((a, b) => p[b]! - p[a]! || a - b);
    let cum = 0, cut = -Infinity;
    for (const i of order) {
      cut = l[i]!;
      if ((cum += p[i]!) >= s.top_p!) break;
    }
    for (let i = 0; i < V; i++) if (l[i]! < cut) l[i] = -Infinity;
  }
  if ((s.min_p ?? 0) > 0) {
    const p = logSoftmax(minPOn.map((v, i) => (l[i] === -Infinity ? -Infinity : v))).map(Math.exp);
    const top = Math.max(...p);
    for (let i = 0; i < V; i++) if (p[i]! < s.min_p! * top) l[i] = -Infinity;
  }
}

/** Inverse CDF in token-id order at `u`, and the distance of `u` to the nearest edge. */
function draw(p: Float64Array, u: number): [number, number] {
  let acc = 0, last = -1;
  for (let i = 0; i < p.length; i++) {
    if (p[i]! <= 0) continue;
    const lo = acc;
    acc += p[i]!;
    last = i;
    if (acc > u) return [i, Math.min(u - lo, acc - u)];
  }
  return [last, 0];
}

/** One step: the token, its logprob and top list from the row of model logits. */
function step(
  logits: Float64Array,
  req: PreprocessedRequest,
  prompt: readonly number[],
  output: readonly number[],
  o: RefOptions,
): RefStep {
  const s = req.sampling_options;
  const l = penalized(logits, req, prompt, output, o);
  const n = req.output_options.logprobs ?? 0;
  const T = s.temperature ?? 1;
  if (T < MIN_TEMPERATURE || s.top_k === 1) {
    const order = [...l.keys()].sort((a, b) => l[b]! - l[a]! || a - b);
    const token = order[0]!;
    const lp = T < MIN_TEMPERATURE ? logSoftmax(l) : l.map((_, i) => (i === token ? 0 : -Infinity));
    return { token, logprob: lp[token]!, top: topOf(lp, n), margin: l[token]! - l[order[1]!]! };
  }
  const tempered = l.map((v) => v / T);
  truncate(tempered, req, o.mutation === "min-p-before-temperature" ? l : tempered);
  const lp = logSoftmax(tempered);
  const seed = s.seed ?? 0;
  const u = rngUniform(seed >>> 0, Math.floor(seed / 2 ** 32) >>> 0, output.length);
  const [token, margin] = draw(lp.map(Math.exp), u);
  const shown = o.mutation === "logprobs-untempered" ? logSoftmax(l) : lp;
  return { token, logprob: shown[token]!, top: topOf(shown, n), margin };
}

/** The reference's output for `req` (max_tokens, min_tokens, EOS, stop tokens as the engine's). */
export function referenceGenerate(
  model: ReferenceModel,
  req: PreprocessedRequest,
  o: RefOptions = {},
): RefResult {
  const run = model.session();
  const prompt = req.token_ids, stop = req.stop_conditions;
  const eos = new Set(stop.ignore_eos ? [] : req.eos_token_ids);
  const shown = new Set(stop.stop_token_ids ?? []);
  const hidden = new Set(stop.stop_token_ids_hidden ?? []);
  const out: RefResult = { tokens: [], finish: "length", steps: [] };
  const max = Math.min(
    stop.max_tokens ?? Infinity,
    model.config.maxPositionEmbeddings - prompt.length,
  );
  let logits = run(prompt).at(-1)!;
  while (out.tokens.length < max) {
    const st = step(logits, req, prompt, out.tokens, o);
    if (hidden.has(st.token)) return { ...out, finish: "stop" };
    if (eos.has(st.token)) return { ...out, finish: "eos" };
    out.tokens.push(st.token);
    out.steps.push(st);
    if (shown.has(st.token)) return { ...out, finish: "stop" };
    logits = run([st.token])[0]!;
  }
  return out;
}

/** How close a logprob must be: `tol + |ref| * eps`. */
export interface Bound {
  tol: number;
  eps: number;
}

/** What the engine streamed for one request, flattened. */
export interface Streamed {
  ids: number[];
  finish: unknown;
  logprobs?: number[];
  top?: { ids: number[]; logprobs: number[] }[];
}

/** Flatten an engine's chunks into what {@linkcode checkStream} reads. */
export function streamed(chunks: readonly LLMEngineOutput[]): Streamed {
  const lp = chunks.some((c) => c.log_probs !== undefined);
  return {
    ids: chunks.flatMap((c) => c.token_ids),
    finish: chunks.at(-1)?.finish_reason,
    ...(lp
      ? {
        logprobs: chunks.flatMap((c) => c.log_probs ?? []),
        top: chunks.flatMap((c) =>
          (c.top_logprobs ?? []).map((row) => ({
            ids: row.map((t) => t.token_id),
            logprobs: row.map((t) => t.logprob),
          }))
        ),
      }
      : {}),
  };
}

const close = (a: number, b: number, k: Bound) =>
  a === b || Math.abs(a - b) <= k.tol + k.eps * Math.abs(b);

/**
 * Throws unless `got` is `ref`: the same tokens and finish reason exactly, and (where logprobs
 * were asked for) each token's logprob and top list within `bound` (entries whose reference
 * logprobs lie within the bound of each other may trade places).
 */
export function checkStream(got: Streamed, ref: RefResult, bound: Bound, what: string): void {
  deepStrictEqual(got.ids, ref.tokens, `${what}: tokens`);
  strictEqual(got.finish, ref.finish, `${what}: finish reason`);
  if (got.logprobs === undefined) return;
  strictEqual(got.logprobs.length, ref.steps.length, `${what}: one logprob a token`);
  ref.steps.forEach((s, i) => {
    ok(
      close(got.logprobs![i]!, s.logprob, bound),
      `${what} #${i}: ${got.logprobs![i]} ≠ ${s.logprob}`,
    );
    const top = got.top![i]!;
    deepStrictEqual(top.ids.length, s.top.ids.length, `${what} #${i}: top list length`);
    top.ids.forEach((id, r) => {
      const j = s.top.ids.indexOf(id);
      ok(
        j >= 0 && close(s.top.logprobs[j]!, s.top.logprobs[r]!, bound),
        `${what} #${i}: rank ${r} is ${id}, ${s.top.ids[r]} due`,
      );
      ok(
        close(top.logprobs[r]!, s.top.logprobs[j]!, bound),
        `${what} #${i}: top ${id}: ${top.logprobs[r]} ≠ ${s.top.logprobs[j]}`,
      );
    });
  });
}

/** The largest logprob error of `got` against `ref` (tokens assumed equal), for reports. */
export function logprobError(got: Streamed, ref: RefResult): number {
  let worst = 0;
  ref.steps.forEach((s, i) => {
    worst = Math.max(worst, Math.abs(got.logprobs![i]! - s.logprob));
    got.top![i]!.ids.forEach((id, r) => {
      const j = s.top.ids.indexOf(id);
      if (j >= 0) worst = Math.max(worst, Math.abs(got.top![i]!.logprobs[r]! - s.top.logprobs[j]!));
    });
  });
  return worst;
}

/** `r` as an engine would stream it (with logprobs when `logprobs`): a mutant's stream. */
export function asStreamed(r: RefResult, logprobs: boolean): Streamed {
  return {
    ids: r.tokens,
    finish: r.finish,
    ...(logprobs
      ? { logprobs: r.steps.map((s) => s.logprob), top: r.steps.map((s) => s.top) }
      : {}),
  };
}
