/**
 * The work of `WebGpuEngine`'s step loop on the GPU: a step encoded and submitted, its sampled
 * tokens read back later and handed to their sequences, and the full blocks each sequence
 * completes committed to the prefix cache. The loop decides which step runs when; these run it.
 *
 * @module
 */
import { EngineError } from "../../contract/errors.ts";
import type { SampledToken } from "../../gpu/kernels/sampling.ts";
import type { Sequence } from "../sequence.ts";
import { type SpeculationCounts, takeVerified } from "../speculation.ts";
import type { EngineParts } from "./assemble.ts";
import type { PipelineDepth } from "./pipeline_depth.ts";
import type { Step } from "./scheduler.ts";
import { countSubmitted, type InFlight, type StepCounts } from "./step_counts.ts";

/** What steps run on: a started engine's device and parts, its pipeline and its counters. */
export interface StepParts extends
  Pick<
    EngineParts,
    "tokens" | "forward" | "sampler" | "readback" | "blocks" | "scheduler"
  > {
  /** The device steps are submitted to. */
  device: GPUDevice;
  /** The steps submitted and not yet settled, oldest first. */
  pipe: InFlight[];
  /** How many steps may be in flight; it times each one read back. */
  depth: PipelineDepth;
  /** The engine's step counts. */
  steps: StepCounts;
  /** The engine's speculation counts. */
  speculation: SpeculationCounts;
  /** Wake the step loop (a guided sequence's next mask is ready). */
  wake(): void;
}

/**
 * Encode and submit one step; its sampled tokens are read back later (`settleStep`). A step that
 * cannot be encoded (its plan refused, a pipeline failed) never reaches the GPU: it fails the
 * requests it carries, typed, and the others go on.
 */
export async function submitStep(p: StepParts, step: Step): Promise<void> {
  const encoder = p.device.createCommandEncoder({ label: "engine:step" });
  const sampled = step.sampled;
  let read: (() => Promise<SampledToken[]>) | undefined;
  try {
    // Tokens the CPU appended (forced by a guide) reach the store before this step reads them.
    for (const { seq, draft } of step.parts) {
      p.tokens.sync(seq);
      if (draft) p.tokens.writeDraft(seq, draft);
    }
    const { logits } = await p.forward.encode(encoder, step.batch);
    const rows = step.rows;
    if (rows.length > 0) {
      const store = p.tokens;
      p.sampler.write(rows.map(({ seq, offset }) => seq.sampling(store.start(seq), offset)));
      await p.sampler.encode(encoder, logits, rows.length);
      await store.encodeAppend(encoder, rows, p.sampler.result);
      const withTop = sampled.some((s) => s.request.output_options.logprobs !== undefined);
      read = p.readback.encode(encoder, rows.length, withTop);
    }
  } catch (e) {
    const error = EngineError.from(e);
    for (const { seq } of step.parts) {
      seq.fail(error);
      p.scheduler.remove(seq);
    }
    return;
  }
  p.device.queue.submit([encoder.finish()]);
  countSubmitted(p.steps, sampled);
  for (const { seq, count } of step.parts) {
    seq.computed += count;
    commitBlocks(p, seq);
  }
  if (read === undefined) return;
  const drafts = new Map(step.parts.flatMap((d) => d.draft ? [[d.seq, d.draft]] : []));
  const entry: InFlight = {
    seqs: sampled.map((seq) => ({ seq, epoch: seq.epoch, draft: drafts.get(seq) })),
    submitted: performance.now(),
    resolvedAt: undefined,
    results: read(),
  };
  for (const seq of sampled) seq.ahead++;
  const resolved = () => (entry.resolvedAt = performance.now());
  entry.results.then(resolved, resolved);
  p.pipe.push(entry);
  p.steps.maxInFlight = Math.max(p.steps.maxInFlight, p.pipe.length);
}

/** Hand a step's read-back tokens to their sequences (dropping those no longer wanted). */
export async function settleStep(p: StepParts, entry: InFlight): Promise<void> {
  const results = await entry.results;
  p.depth.observe(entry.submitted, entry.resolvedAt ?? performance.now());
  let row = 0;
  for (const { seq, epoch, draft } of entry.seqs) {
    const mine = results.slice(row, row += 1 + (draft?.length ?? 0));
    if (seq.epoch !== epoch || seq.finished) {
      p.steps.discardedTokens += mine.length; // preempted, or ended by an earlier token
      continue;
    }
    seq.ahead--;
    const r = mine[0]!;
    if (seq.signal.aborted) seq.cancel();
    else if (draft) {
      const cost = p.depth.drainCost(entry);
      takeVerified(seq, draft, mine, p.speculation, p.scheduler.drafter, cost);
    } else seq.accept(r.token, r.logprob, r.top);
    // Committed before a finished sequence lets its blocks go: a verified step can complete a
    // block in the step where the sequence ends, and that block is as good as any other.
    commitBlocks(p, seq);
    if (seq.finished) p.scheduler.remove(seq);
    // A guided sequence's next mask, made as soon as its token is known.
    if (!seq.maskReady) void seq.prepareMask().then(() => p.wake());
  }
}

/** Publish the sequence's full blocks whose tokens are known and whose K/V are written. */
function commitBlocks(p: StepParts, seq: Sequence): void {
  if (seq.blocks) {
    p.blocks.commit(seq.blocks, seq.tokens, Math.min(seq.computed, seq.tokens.length));
  }
}
