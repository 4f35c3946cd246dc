/**
 * Another inference engine the benchmark compares Kiln with (`deno task bench --peers`).
 * `bench/peers/mod.ts` exports `peers: Peer[]`; the benchmark calls `setup` once per model,
 * checks `greedy` against Kiln's greedy tokens for the same prompt, and only then times
 * `decode` (and `prefill`, where given) interleaved with Kiln's runs.
 */
export interface Peer {
  /** Shown in the table and the JSON. */
  name: string;
  /**
   * Load the checkpoint in `modelDir` (HF layout: `config.json`, `model.safetensors`). Resolves
   * `undefined` when ready, or a sentence saying why this peer cannot run here.
   */
  setup(modelDir: string): Promise<string | undefined>;
  /** `n` tokens decoded greedily after `promptIds` (no EOS stop). */
  greedy(promptIds: number[], n: number): Promise<number[]>;
  /**
   * `batch` concurrent streams of `n` greedy tokens each after `promptIds`. `seconds`: from the
   * first generated token (any stream) to the last; `tokens`: those generated in that window,
   * `batch × (n − 1)` (each stream's first token comes out of prefill, before it).
   */
  decode(
    promptIds: number[],
    n: number,
    batch: number,
  ): Promise<{ tokens: number; seconds: number }>;
  /** One prefill of `promptIds` to its first token, in seconds (time to first token). */
  prefill?(promptIds: number[]): Promise<{ seconds: number }>;
  /**
   * Peers that compute on CPU threads (llama.cpp's CPU build): use `n` threads from the next
   * call on. The benchmark tries each candidate count per workload and times the fastest.
   */
  setThreads?(n: number): Promise<void>;
  /** Free everything `setup` took. */
  close(): Promise<void>;
}
