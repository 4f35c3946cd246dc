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

export class PipelineDepth {
  #stepMs: number | undefined;
  #lastResolved: number | undefined;

  /** `fixed`: always this depth (1 waits for every token). */
  constructor(readonly fixed?: number) {}

  /** A step submitted at `submitted` whose tokens were read back at `resolved` (ms). */
  observe(submitted: number, resolved: number): void {
    if (this.#lastResolved !== undefined && submitted < this.#lastResolved) {
      const ms = resolved - this.#lastResolved;
      this.#stepMs = this.#stepMs === undefined ? ms : 0.9 * this.#stepMs + 0.1 * ms;
    }
    this.#lastResolved = resolved;
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
