/**
 * How many decode steps to keep in flight: enough that the read-back latency (Deno resolves a
 * `mapAsync` about 11 ms after submit; more under load) hides behind GPU work. The GPU time per
 * step is measured from steps that queued behind the previous one, as the gap between their
 * read-backs resolving, smoothed.
 */

/** Read-back latency to hide, in ms. */
export const HIDE_MS = 25;
export const MIN_DEPTH = 2;
export const MAX_DEPTH = 16;
/** Gaps between read-backs that `drainCost` takes the median of, and the fewest it trusts. */
const RECENT_GAPS = 9;
const MIN_GAPS = 5;

export class PipelineDepth {
  #stepMs: number | undefined;
  #lastResolved: number | undefined;
  /** The latest gaps between queued steps' read-backs (ms), oldest first. */
  #gaps: number[] = [];

  /** `fixed`: always this depth (1 waits for every token). */
  constructor(readonly fixed?: number) {}

  /** A step submitted at `submitted` whose tokens were read back at `resolved` (ms). */
  observe(submitted: number, resolved: number): void {
    if (this.#lastResolved !== undefined && submitted < this.#lastResolved) {
      const ms = resolved - this.#lastResolved;
      this.#stepMs = this.#stepMs === undefined ? ms : 0.9 * this.#stepMs + 0.1 * ms;
      // Read-backs that resolve together (one poll of the device, or a busy event loop that
      // saw them late) say nothing of the GPU's time: kept out of the recent gaps.
      if (ms >= 1) this.#gaps = [...this.#gaps.slice(1 - RECENT_GAPS), ms];
    }
    this.#lastResolved = resolved;
  }

  /**
   * What waiting for a step's tokens (submitted alone, as a speculative step is) cost, in decode
   * steps: the step's time from submit to read-back over the GPU time of a pipelined step (the
   * median of the latest gaps between queued steps' read-backs), less the one step it produced.
   * 0 until five such gaps are known.
   */
  drainCost(step: { submitted: number; resolvedAt: number | undefined }): number {
    const stepMs = this.gapMs;
    if (stepMs === undefined || step.resolvedAt === undefined) return 0;
    return Math.max(0, (step.resolvedAt - step.submitted) / stepMs - 1);
  }

  /** The GPU time of a pipelined step (ms): the median of the latest gaps, once five are known. */
  get gapMs(): number | undefined {
    const gaps = [...this.#gaps].sort((a, b) => a - b);
    return gaps.length < MIN_GAPS ? undefined : gaps[Math.floor(gaps.length / 2)]!;
  }

  /** The measured GPU time per step (ms), once known. */
  get stepMs(): number | undefined {
    return this.#stepMs;
  }

  /** Steps to keep in flight now. */
  get depth(): number {
    if (this.fixed !== undefined) return this.fixed;
    if (this.#stepMs === undefined) return MIN_DEPTH;
    const hide = Math.ceil(HIDE_MS / Math.max(this.#stepMs, 0.05)) + 1;
    return Math.min(MAX_DEPTH, Math.max(MIN_DEPTH, hide));
  }
}
