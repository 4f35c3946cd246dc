/**
 * Thread counts for the benchmark's CPU peers (a `Peer` with `setThreads`, such as llama.cpp's
 * CPU build): each workload (a decode batch size, a prefill length) is run at every candidate
 * count, in interleaved rounds (1, 2, …, N, 1, 2, …), and the fastest count is kept for the timed
 * rounds against Kiln. A CPU engine given more threads than the cores it can have does not merely
 * slow down: ggml's threads spin at barriers, and a decode that runs at hundreds of tokens/s on
 * one thread can fall to a few. So no count is assumed; every tried count's speed is reported.
 */

/** One thread count's speed in each sweep round, tokens/s. */
export interface ThreadTrial {
  threads: number;
  tokens_per_s: number[];
}

/** The counts tried for one workload and the one kept (the fastest). */
export interface ThreadSweep {
  chosen: number;
  tried: ThreadTrial[];
}

/** Which counts to try and how many rounds of them. */
export interface ThreadPlan {
  candidates: readonly number[];
  rounds: number;
}

/** The counts to try on a machine with `cores` hardware threads: 1 to `cores`. */
export function threadCandidates(cores: number): number[] {
  const n = Number.isInteger(cores) && cores > 0 ? cores : 1;
  return Array.from({ length: n }, (_, i) => i + 1);
}

/** `--peer-threads 1,2,4`: positive integers, sorted, each once. Throws on anything else. */
export function parseThreadList(text: string): number[] {
  const parts = text.split(",").map((s) => s.trim()).filter((s) => s !== "");
  const xs = parts.map(Number);
  if (xs.length === 0 || !xs.every((x) => Number.isInteger(x) && x > 0)) {
    throw new Error(`--peer-threads: expected positive integers such as 1,2,4, got "${text}"`);
  }
  return [...new Set(xs)].sort((a, b) => a - b);
}

/** A count's speed: the best of its rounds (interference only ever slows a run down). */
export function bestRate(t: ThreadTrial): number {
  return t.tokens_per_s.length === 0 ? 0 : Math.max(...t.tokens_per_s);
}

/** The fastest count; on an exact tie, the fewer threads. Throws when nothing was tried. */
export function chooseThreads(tried: readonly ThreadTrial[]): number {
  let best: ThreadTrial | undefined;
  for (const t of tried) {
    const better = best === undefined || bestRate(t) > bestRate(best) ||
      (bestRate(t) === bestRate(best) && t.threads < best.threads);
    if (better) best = t;
  }
  if (best === undefined) throw new Error("chooseThreads: no thread count was tried");
  return best.threads;
}

/**
 * Run `measure` (one timed run, tokens/s) at each candidate count, `rounds` times, interleaved;
 * `setThreads` is called before each run. Leaves the peer at the chosen count.
 */
export async function sweepThreads(
  plan: ThreadPlan,
  setThreads: (n: number) => Promise<void>,
  measure: () => Promise<number>,
): Promise<ThreadSweep> {
  if (plan.candidates.length === 0) throw new Error("sweepThreads: no candidate thread counts");
  const tried: ThreadTrial[] = plan.candidates.map((threads) => ({ threads, tokens_per_s: [] }));
  for (let round = 0; round < Math.max(1, plan.rounds); round++) {
    for (const t of tried) {
      await setThreads(t.threads);
      t.tokens_per_s.push(await measure());
    }
  }
  const chosen = chooseThreads(tried);
  await setThreads(chosen);
  return { chosen, tried };
}

/** `1 → 680, 2 → 1.5 tok/s` style text for captions and tables (best of each count's rounds). */
export function describeSweep(s: ThreadSweep): string {
  const rate = (x: number) => x.toFixed(x >= 100 ? 0 : x >= 10 ? 1 : 2);
  return `${s.chosen} thread${s.chosen === 1 ? "" : "s"} (tried ${
    s.tried.map((t) => `${t.threads}: ${rate(bestRate(t))}`).join(", ")
  } tok/s)`;
}
