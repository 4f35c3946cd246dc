/**
 * What the benchmark records of one peer beside Kiln (`compare.ts` fills it, `guard.ts` judges
 * it, the report, table and chart print it): apart from both so that neither imports the other.
 */
import type { ThreadSweep } from "./threads.ts";

export interface RoundPair {
  kiln: number;
  peer: number;
}

export interface PeerReport {
  name: string;
  status: "ok" | "unavailable" | "mismatch" | "error";
  reason?: string;
  greedy?: { prompt: number[]; kiln: number[]; peer: number[]; first_difference?: number };
  /**
   * Tokens/s per round at each batch size, and Kiln ÷ peer (median over rounds); `threads`: the
   * counts a CPU peer tried for this batch and the one it was timed with.
   */
  decode?: {
    batch: number;
    tokens_per_s: RoundPair[];
    kiln_over_peer: number;
    threads?: ThreadSweep;
  }[];
  /** Prefill tokens/s per round at each prompt length, and Kiln ÷ peer. */
  prefill?: {
    prompt_tokens: number;
    tokens_per_s: RoundPair[];
    kiln_over_peer: number;
    threads?: ThreadSweep;
  }[];
  /** The guard passed (`guard.ts`): only then may the ratios be published. */
  publishable?: boolean;
  /** Why the ratios must not be published. */
  withheld?: string[];
  /** What the guard saw that does not withhold them (a thread count that collapsed). */
  notes?: string[];
}
