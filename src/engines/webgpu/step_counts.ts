/** What a `WebGpuEngine`'s step loop counts (`engine.steps`), and a step still in flight. */
import type { SampledToken } from "../../gpu/kernels/sampling.ts";
import type { Sequence } from "../sequence.ts";

/** Counters of a `WebGpuEngine`'s steps since it was made. */
export interface StepCounts {
  /** Steps submitted to the GPU. */
  submitted: number;
  /** Steps that sampled a guided sequence. */
  guided: number;
  /** Of those, the steps that sampled a free sequence too (constrained and free in one batch). */
  mixed: number;
  /** The most steps in flight at once. */
  maxInFlight: number;
  /** Sampled tokens dropped (read back after their sequence had ended or been preempted). */
  discardedTokens: number;
  /** Guided tokens appended without a sampling step (the grammar allowed only them). */
  forcedTokens: number;
  /** Sequences preempted. */
  preemptions: number;
  /** KV blocks released because no layer's window reached them any more. */
  droppedBlocks: number;
}

/** Every counter at zero. */
export const stepCounts = (): StepCounts => ({
  submitted: 0,
  guided: 0,
  mixed: 0,
  maxInFlight: 0,
  discardedTokens: 0,
  forcedTokens: 0,
  preemptions: 0,
  droppedBlocks: 0,
});

/** Count a submitted step that sampled `sampled` (guided when one is, mixed when free ones too). */
export function countSubmitted(c: StepCounts, sampled: readonly Sequence[]): void {
  c.submitted++;
  const guided = sampled.filter((s) => s.guide !== undefined).length;
  if (guided > 0) c.guided++;
  if (guided > 0 && guided < sampled.length) c.mixed++;
}

/** A submitted step whose sampled tokens are being read back. */
export interface InFlight {
  /** The sampled sequences in row order; one with a draft has a row per drafted token more. */
  seqs: { seq: Sequence; epoch: number; draft: number[] | undefined }[];
  submitted: number;
  resolvedAt: number | undefined;
  results: Promise<SampledToken[]>;
}
