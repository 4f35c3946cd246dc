/**
 * Compare a model on the GPU with reference logits (the format of the shared fixtures'
 * `reference.json`): logits at every prompt position and at every greedy step, teacher-forced
 * with the reference's greedy tokens, and greedy agreement wherever the reference margin is
 * wider than twice the tolerance.
 */
import { EngineError } from "../contract/errors.ts";
import type { TensorDtype } from "../gpu/dtype.ts";
import type { KvDtype } from "../gpu/kernels/attention.ts";
import { Forward } from "../runtime/forward.ts";
import type { GpuModel } from "../runtime/gpu_model.ts";

/** One prompt of a reference file, with float64 reference logits. */
export interface ReferencePrompt {
  /** The prompt's token ids. */
  input_ids: number[];
  /** Logits at every prompt position (`vocab_size` per row). */
  logits: number[][];
  /** The reference's greedy continuation. */
  greedy_tokens: number[];
  /** At each greedy step, the gap between the best and second-best logit. */
  greedy_margins: number[];
  /** Logits at each greedy step, teacher-forced with `greedy_tokens`. */
  greedy_step_logits: number[][];
}

/** A reference file (`reference.json`): logits a checkpoint must reproduce. */
export interface Reference {
  /** The checkpoint's name. */
  name?: string;
  /** The dtype the reference was computed from. */
  dtype?: string;
  /** Vocabulary size (the length of every logit row). */
  vocab_size?: number;
  /** The prompts to check. */
  prompts: ReferencePrompt[];
  /**
   * How far the reference logits themselves are from exact arithmetic, when they come from
   * another implementation (llama.cpp's, in the family fixtures: its float64 check), as a max
   * |error|; the bounds widen by it (default 0: a float64 reference).
   */
  reference_error?: number;
}

/** How one prompt compared with its reference. */
export interface PromptResult {
  /** Index of the prompt in the reference. */
  prompt: number;
  /** Prompt length in tokens. */
  tokens: number;
  /** Largest absolute logit difference, over prompt positions and greedy steps. */
  max_abs_err: number;
  /** Largest absolute reference logit (what a scaled bound is relative to). */
  max_abs_ref: number;
  /** The bound `max_abs_err` was held to. */
  max_abs_bound: number;
  /** `‖got − ref‖₂ / ‖ref‖₂` over the same logits. */
  rel_l2: number;
  /** Greedy steps where the model's argmax matched the reference token. */
  greedy_agree: number;
  /** Greedy steps checked: those whose reference margin exceeds twice the absolute bound. */
  greedy_checked: number;
  /** Prompt positions where the model's argmax equals the reference's (teacher-forced). */
  argmax_agree: number;
  /** Prompt positions checked: those whose reference top-2 margin exceeds twice the bound. */
  argmax_checked: number;
  /** Every logit finite, both errors within tolerance and every checked greedy step agreed. */
  passed: boolean;
}

/** The bounds a prompt's logits must meet. */
export interface Tolerance {
  /**
   * Bound on the largest absolute logit difference, relative to the logits' magnitude: the
   * bound is `maxAbs · max(1, max |reference logit|)` over the prompt's rows.
   */
  maxAbs: number;
  /** Bound on the relative L2 error `‖got − ref‖₂ / ‖ref‖₂` over the prompt's rows. */
  relL2: number;
}

/**
 * The bounds for a model whose KV cache is `kvDtype`, whatever its weights (F32, F16, BF16 or a
 * GGUF's quantized blocks): Kiln widens every stored weight to f32 and computes in f32, so what
 * is left against a float64 reference on the same stored (or dequantized) weights is f32
 * rounding, whose size follows the logits' magnitude, not the weights' dtype. Each bound is a
 * stated factor above the worst error measured with `scripts/logit_errors.ts` (lavapipe) and
 * the fixtures page of `test/browser/fixtures.test.mjs` (SwiftShader), over the three HF
 * fixtures and fortune against HF's files, against Kiln's float64 pass, and as GGUF (Q8_0 and
 * Q4_0 for all, Q6_K and Q4_K_M for fortune) against float64 on the dequantized weights:
 *
 * - f32 KV cache: max |err| ≤ 1e-5 · max(1, max |logit|) and relative L2 ≤ 5e-6. Worst
 *   measured: scaled max |err| 1.7e-6 (llama-mqa-bf16 as Q4_0; 1.5e-6 on SwiftShader), relative
 *   L2 8.1e-7 (llama-gqa-f32 against HF): bounds 5.8x and 6.2x above. HF's files are part of
 *   that: with 6 decimals and an error of their own, they differ from an exact float64 pass by up
 *   to 8.6e-7 scaled (1.8e-5 on Qwen2's logits of 50) and 4.3e-7 relative L2.
 * - f16 KV cache (each cached key and value rounded to 11 significant bits, which a float64
 *   reference does not do): max |err| ≤ 6e-3 · max(1, max |logit|) and relative L2 ≤ 3e-3.
 *   Worst measured: scaled 1.1e-3 (llama-mqa-bf16 as Q8_0), relative L2 5.6e-4 (Qwen2 as Q4_0
 *   and against HF): bounds 5.6x and 5.4x above. The f16 cache's own noise is that large, so an
 *   error below it (an RMSNorm epsilon 10x too large on the HF fixtures) can only be caught with
 *   an f32 cache.
 *
 * The f32 bounds reject, on these fixtures, an RMSNorm epsilon 10x too large, a RoPE base 1 %
 * off, one quantized weight of a layer off by one step, a causal mask off by one and an
 * attention softmax that overflows (`src/reference/mutation_test.ts`). They were measured on small
 * models (hidden size up to 256, 6 layers, attention scores under about 11) on CPU adapters; a
 * GPU's or a larger model's f32 rounding may differ. Rounding an attention score s to f32 moves
 * its softmax weight by about 2^-24·|s|: llama-gqa-f32 with its queries scaled 18-28x (scores in
 * the hundreds) reached 4.3e-5 scaled and 1.0e-5 relative L2 at some scales, beyond these bounds.
 */
export function tolerance(kvDtype: KvDtype = "f32"): Tolerance {
  return kvDtype === "f32" ? { maxAbs: 1e-5, relL2: 5e-6 } : { maxAbs: 6e-3, relL2: 3e-3 };
}

/**
 * Parse a reference file's text; `InvalidArgument` when a prompt lacks a field (`SyntaxError` when
 * not JSON).
 */
export function parseReference(text: string): Reference {
  const r = JSON.parse(text) as Reference;
  if (!Array.isArray(r?.prompts)) throw EngineError.invalidArgument("reference: no prompts array");
  r.prompts.forEach((p, i) => {
    for (
      const k of [
        "input_ids",
        "logits",
        "greedy_tokens",
        "greedy_margins",
        "greedy_step_logits",
      ] as const
    ) {
      if (!Array.isArray(p[k])) {
        throw EngineError.invalidArgument(`reference.prompts[${i}].${k}: missing`);
      }
    }
  });
  return r;
}

function argmax(v: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i]! > v[best]!) best = i;
  return best;
}

/**
 * A model's logits for one reference prompt: at every prompt position, then at each greedy step,
 * teacher-forced with the reference's greedy tokens (`steps[0]` is the last prompt row).
 */
export interface PromptLogits {
  /** One row of `vocab_size` logits per prompt token. */
  prompt: ArrayLike<number>[];
  /** One row per greedy step of the reference. */
  steps: ArrayLike<number>[];
}

/** The model under test: its logits for a reference prompt (`index` is the prompt's). */
export type LogitRunner = (prompt: ReferencePrompt, index: number) => Promise<PromptLogits>;

/**
 * Compare one prompt's logits with its reference: max |err| and relative L2 over every prompt
 * position and greedy step, and the argmax at each greedy step whose reference margin exceeds
 * twice the absolute bound. A NaN or infinite logit fails the prompt.
 */
export function comparePrompt(
  p: ReferencePrompt,
  index: number,
  got: PromptLogits,
  tol: Tolerance,
  referenceError = 0,
): PromptResult {
  const steps = p.greedy_tokens.length;
  if (
    p.logits.length !== p.input_ids.length || p.greedy_step_logits.length !== steps ||
    p.greedy_margins.length !== steps
  ) {
    throw EngineError.invalidArgument(
      `reference prompt ${index}: ${p.input_ids.length} tokens, ${p.logits.length} logit rows, ` +
        `${steps} greedy tokens, ${p.greedy_step_logits.length} step rows and ` +
        `${p.greedy_margins.length} margins`,
    );
  }
  if (got.prompt.length !== p.logits.length || got.steps.length !== steps) {
    throw EngineError.invalidArgument(
      `prompt ${index}: ${got.prompt.length} prompt rows and ${got.steps.length} steps, ` +
        `the reference has ${p.logits.length} and ${steps}`,
    );
  }
  let maxAbs = 0, errSq = 0, refSq = 0, refMax = 0;
  for (const row of [...p.logits, ...p.greedy_step_logits]) {
    for (const v of row) refMax = Math.max(refMax, Math.abs(v));
  }
  const bound = tol.maxAbs * Math.max(1, refMax) + referenceError;
  let count = 0;
  let finite = true;
  const compare = (row: ArrayLike<number>, ref: number[]) => {
    if (row.length !== ref.length) {
      throw EngineError.invalidArgument(
        `prompt ${index}: a row of ${row.length} logits, the reference has ${ref.length}`,
      );
    }
    for (let i = 0; i < ref.length; i++) {
      const e = row[i]! - ref[i]!;
      if (!Number.isFinite(e)) finite = false;
      maxAbs = Math.max(maxAbs, Math.abs(e));
      errSq += e * e;
      refSq += ref[i]! ** 2;
    }
    count += ref.length;
  };
  p.logits.forEach((ref, t) => compare(got.prompt[t]!, ref));
  let argmaxAgree = 0, argmaxChecked = 0;
  p.logits.forEach((ref, t) => {
    const top = argmax(ref);
    let second = -Infinity;
    for (let i = 0; i < ref.length; i++) if (i !== top) second = Math.max(second, ref[i]!);
    if (ref[top]! - second > 2 * bound) {
      argmaxChecked++;
      if (argmax(got.prompt[t]!) === top) argmaxAgree++;
    }
  });
  let agree = 0, checked = 0;
  for (let s = 0; s < steps; s++) {
    const row = got.steps[s]!;
    compare(row, p.greedy_step_logits[s]!);
    if (p.greedy_margins[s]! > 2 * bound) {
      checked++;
      if (argmax(row) === p.greedy_tokens[s]) agree++;
    }
  }
  const relL2 = Math.sqrt(errSq / Math.max(refSq, 1e-30));
  // A reference `referenceError` off in every logit is that much off in L2, at worst.
  const relBound = tol.relL2 + referenceError * Math.sqrt(count / Math.max(refSq, 1e-30));
  const passed = finite && maxAbs <= bound && relL2 <= relBound && agree === checked;
  return {
    prompt: index,
    tokens: p.input_ids.length,
    max_abs_err: maxAbs,
    max_abs_ref: refMax,
    max_abs_bound: bound,
    rel_l2: relL2,
    greedy_agree: agree,
    greedy_checked: checked,
    argmax_agree: argmaxAgree,
    argmax_checked: argmaxChecked,
    passed,
  };
}

/** Run every prompt of `reference` through `run` and compare each with {@linkcode comparePrompt}. */
export async function verifyLogits(
  run: LogitRunner,
  reference: Reference,
  tol: Tolerance,
  onResult?: (r: PromptResult) => void,
): Promise<{ passed: boolean; results: PromptResult[] }> {
  const results: PromptResult[] = [];
  for (const [i, p] of reference.prompts.entries()) {
    const r = comparePrompt(p, i, await run(p, i), tol, reference.reference_error ?? 0);
    results.push(r);
    onResult?.(r);
  }
  return { passed: results.every((r) => r.passed), results };
}

/** One prompt on the GPU (a single sequence in blocks 0..n): prefill, then one step per token. */
async function gpuPromptLogits(
  fwd: Forward,
  p: ReferencePrompt,
  index: number,
): Promise<PromptLogits> {
  const m = fwd.model;
  const V = m.config.vocabSize;
  const steps = p.greedy_tokens.length;
  const T = p.input_ids.length;
  const total = T + steps;
  const blocks = Math.ceil(total / m.blockSize);
  if (blocks > m.kvBlocks) {
    throw EngineError.invalidArgument(`prompt ${index}: ${total} tokens exceed the KV cache`);
  }
  const blockTable = Array.from({ length: blocks }, (_, i) => i);
  const positions = Array.from({ length: T }, (_, i) => i);
  const prefill = await fwd.run({
    tokens: p.input_ids,
    positions,
    slots: positions,
    tableOffsets: new Array(T).fill(0),
    blockTable,
    logitRows: positions,
  });
  const prompt = positions.map((t) => prefill.subarray(t * V, (t + 1) * V));
  const out: PromptLogits = { prompt, steps: steps > 0 ? [prompt[T - 1]!] : [] };
  for (let s = 1; s < steps; s++) {
    const pos = T + s - 1;
    out.steps.push(
      await fwd.run({
        tokens: [p.greedy_tokens[s - 1]!],
        positions: [pos],
        slots: [pos],
        tableOffsets: [0],
        blockTable,
        logitRows: [0],
      }),
    );
  }
  return out;
}

/**
 * Verify every prompt of `reference` on the GPU within {@linkcode tolerance} of the model's KV
 * cache dtype; `dtype` is the weights' (that of the embedding), for reports.
 */
export async function verifyModel(
  model: GpuModel,
  reference: Reference,
  onResult?: (r: PromptResult) => void,
): Promise<{ passed: boolean; results: PromptResult[]; dtype: TensorDtype }> {
  if (reference.vocab_size !== undefined && reference.vocab_size !== model.config.vocabSize) {
    throw EngineError.invalidArgument(
      `reference vocab ${reference.vocab_size} != model vocab ${model.config.vocabSize}`,
    );
  }
  const fwd = new Forward(model);
  try {
    const run: LogitRunner = (p, i) => gpuPromptLogits(fwd, p, i);
    const { passed, results } = await verifyLogits(
      run,
      reference,
      tolerance(model.kvDtype),
      onResult,
    );
    return { passed, results, dtype: model.dtype };
  } finally {
    fwd.destroy();
  }
}
