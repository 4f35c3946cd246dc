/**
 * Compiling every compute pipeline an engine can dispatch while it starts, so that the first
 * request runs as fast as the next (on a CPU adapter a pipeline takes tens to hundreds of
 * milliseconds to compile, and a step needs a dozen or more).
 *
 * The pipelines a step takes depend on its shape only through a few thresholds: the number of
 * tokens in the step (the products' row count, see `productRowClasses`, and whether decode
 * attention splits the key axis, `SPLIT_MAX_TOKENS`), the number of logit rows (the LM head's
 * row count) and, on CPU paths, whether decode attention sees few keys or many. The warm-up builds the forward's plans for one step of each class, through the
 * same code a request's step takes, and the sampler's and the token store's dispatches. All of
 * them are asked for at once, so the implementation may compile them in parallel
 * (`createComputePipelineAsync`), and they land in the per-device cache that steps read
 * (`gpu/shader.ts`). Then one workgroup of each pipeline runs once (see `touch`).
 */
import { type Dispatch, encodeDispatches } from "../../gpu/dispatch.ts";
import { productRowClasses } from "../../gpu/product/product.ts";
import type { Sampler } from "../../gpu/kernels/sampling.ts";
import { pipelineCounts, watchPipelines } from "../../gpu/shader.ts";
import type { Forward } from "../../runtime/forward.ts";
import { SPLIT_MAX_TOKENS } from "../../runtime/step_plan.ts";
import type { TokenStore } from "./token_store.ts";

/**
 * Run one workgroup of each distinct pipeline among `dispatches`, and wait for the GPU. A CPU
 * implementation may finish a pipeline's compilation at its first dispatch (Mesa's lavapipe
 * generates its machine code then: 20-50 ms a pipeline); this pays that here. The dispatches
 * are the engine's own, on its scratch buffers, which every step writes before it reads, with
 * zeroed inputs: token 0 at position 0, into KV slot 0 (block 0 is free at start, and a sequence
 * that later holds it writes each of its slots before reading them), and a sampled token into
 * the token store's first entry (admitting a sequence writes its slot's tokens).
 */
async function touch(device: GPUDevice, dispatches: readonly Dispatch[]): Promise<void> {
  const once = [...new Map(dispatches.map((d) => [d.pipeline, d])).values()];
  const encoder = device.createCommandEncoder({ label: "engine:warm-up" });
  encodeDispatches(encoder, once.map((d) => ({ ...d, workgroups: [1] })), "engine:warm-up");
  device.queue.submit([encoder.finish()]);
  await device.queue.onSubmittedWorkDone();
}

/** One step shape: tokens in the step, and how many of them return logits. */
export interface StepShape {
  /** Tokens in the step (decode tokens plus prompt chunks). */
  tokens: number;
  /** Logit rows (sequences sampled by the step). */
  rows: number;
  /** The most keys a query of the step sees (default: the model's context). */
  keys?: number;
}

/**
 * One step shape per class of the shapes a step of at most `maxTokens` tokens and `maxSeqs`
 * sequences can take. A step's body depends on its token count and its LM head on its row
 * count, separately; each class of either appears in some shape. Rows never exceed tokens, and a
 * step without logit rows has no LM head.
 */
export function warmShapes(maxTokens: number, maxSeqs: number): StepShape[] {
  const tokens = new Set(productRowClasses(maxTokens));
  tokens.add(Math.min(SPLIT_MAX_TOKENS, maxTokens));
  if (maxTokens > SPLIT_MAX_TOKENS) tokens.add(SPLIT_MAX_TOKENS + 1);
  const shapes: StepShape[] = [...tokens].sort((a, b) => a - b).map((t) => ({
    tokens: t,
    rows: Math.min(t, maxSeqs),
  }));
  // Each row class in some shape (the token classes above include them when maxSeqs <= maxTokens).
  for (const r of productRowClasses(Math.min(maxSeqs, maxTokens))) {
    if (!shapes.some((s) => s.rows === r)) shapes.push({ tokens: r, rows: r });
  }
  // Decode attention over a short context may take a kernel entry of its own (the CPU paths'
  // single pass): one decode shape over one key.
  shapes.push({ tokens: 1, rows: 1, keys: 1 });
  return shapes;
}

/** What the warm-up fills: the engine's forward, sampler and token store. */
export interface WarmTargets {
  device: GPUDevice;
  forward: Forward;
  sampler: Sampler;
  tokens: TokenStore;
  /** The engine's `maxNumBatchedTokens`. */
  maxTokens: number;
  /** The engine's `maxNumSeqs`. */
  maxSeqs: number;
}

/** What a warm-up did: pipelines it compiled (those already cached cost nothing) and its time. */
export interface WarmUpReport {
  /** Pipelines compiled (not found in the device's cache). */
  pipelines: number;
  /** Step shapes whose plans were built. */
  shapes: number;
  /** Wall time, in seconds. */
  seconds: number;
}

/**
 * Build every plan and pipeline a request can need. `onProgress(compiled, total, label)` hears
 * each pipeline as it compiles (`total` grows while the plans are being laid out, then holds).
 */
export async function warmUp(
  t: WarmTargets,
  onProgress?: (compiled: number, total: number, label: string) => void,
): Promise<WarmUpReport> {
  const t0 = performance.now();
  const base = pipelineCounts(t.device);
  const stop = onProgress === undefined
    ? undefined
    : watchPipelines(t.device, (settled, requested, label) => {
      onProgress(settled - base.settled, requested - base.requested, label);
    });
  const shapes = warmShapes(t.maxTokens, t.maxSeqs);
  try {
    const logits = t.forward.reserve(
      Math.max(...shapes.map((s) => s.tokens)),
      Math.max(...shapes.map((s) => s.rows)),
    );
    const dispatches = await Promise.all([
      t.forward.warm(shapes),
      t.sampler.warm(logits),
      t.tokens.warm(t.sampler.result),
    ]);
    await touch(t.device, dispatches.flat());
  } finally {
    stop?.();
  }
  return {
    pipelines: pipelineCounts(t.device).requested - base.requested,
    shapes: shapes.length,
    seconds: (performance.now() - t0) / 1000,
  };
}
