/** The interface the benchmark drives each peer through (kept identical to bench/bench.ts's). */
export interface Peer {
  name: string;
  /** Load the model; a string says why this peer is unavailable here (it is then skipped). */
  setup(modelDir: string): Promise<string | undefined>;
  /** Greedy continuation of promptIds, n tokens (run past EOS). */
  greedy(promptIds: number[], n: number): Promise<number[]>;
  /** Decode n tokens per stream for `batch` streams after the prompt; total tokens and the seconds from first to last token. */
  decode(
    promptIds: number[],
    n: number,
    batch: number,
  ): Promise<{ tokens: number; seconds: number }>;
  prefill?(promptIds: number[]): Promise<{ seconds: number }>;
  close(): Promise<void>;
}
