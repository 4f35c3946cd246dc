/**
 * Decode speed against context length (`deno task bench --contexts 128,2048,8192`): one stream,
 * a fresh prompt of each length (no prefix-cache hit), then `tokens` greedy tokens timed from the
 * first to the last. Each length is capped where the model's context ends (the row says so).
 * The ratio to the shortest context is the figure issue 25's long-context goal is stated in
 * (decode at 8k ≥ 0.6× decode at 128). The prompt's time to first token is kept beside it: a
 * long prompt's prefill, with its attention over every earlier token.
 *
 * @module
 */
import type { LLMEngine } from "../../src/contract/engine.ts";
import type { EngineRunner } from "./kiln_runner.ts";

/** Decode at one context length. */
export interface ContextResult {
  /** The context asked for. */
  context: number;
  /** Prompt tokens run (the context, or less where the model's context ends first). */
  prompt_tokens: number;
  /** Tokens timed (the first generated token starts the clock). */
  timed_tokens: number;
  seconds: number;
  tokens_per_s: number;
  /** Tokens/s over those at the shortest context of the run. */
  ratio_to_shortest: number;
  /** The prompt's time to first token (its prefill), seconds. */
  ttft_s: number;
}

/** What `contextBench` needs. */
export interface ContextBenchOptions {
  /** Context lengths, any order (run shortest first). */
  contexts: number[];
  /** Tokens generated at each (at least 2: the first starts the clock). */
  tokens: number;
  /** The model's context (its `max_position_embeddings`, or the engine's). */
  maxContext: number;
  /** A prompt of `length` tokens no other run shares a prefix with. */
  prompt: (length: number) => number[];
  log: (line: string) => void;
}

/** The prompt length that leaves room for `tokens` more within `maxContext`. */
export function contextPrompt(context: number, tokens: number, maxContext: number): number {
  return Math.max(1, Math.min(context, maxContext - tokens - 1));
}

/** KV positions the context runs need at once (one stream, the longest prompt and its tokens). */
export function contextPositions(
  o: Pick<ContextBenchOptions, "contexts" | "tokens" | "maxContext">,
): number {
  const longest = Math.max(0, ...o.contexts.map((c) => contextPrompt(c, o.tokens, o.maxContext)));
  return 16 * Math.ceil((longest + o.tokens + 1) / 16);
}

/** Decode tokens/s of one stream at each context. */
export async function contextBench<E extends LLMEngine>(
  runner: EngineRunner<E>,
  o: ContextBenchOptions,
): Promise<{ results: ContextResult[]; skipped: string[] }> {
  if (o.tokens < 2) throw new RangeError(`--contexts: needs at least 2 tokens, got ${o.tokens}`);
  const results: ContextResult[] = [];
  const skipped: string[] = [];
  for (const context of [...new Set(o.contexts)].sort((a, b) => a - b)) {
    const length = contextPrompt(context, o.tokens, o.maxContext);
    if (length < context) {
      skipped.push(
        `context ${context}: the model's context is ${o.maxContext}; ran a ${length}-token prompt`,
      );
    }
    o.log(`  context ${context}: a ${length}-token prompt, then ${o.tokens} tokens`);
    const r = await runner.run([o.prompt(length)], o.tokens);
    const timed = r.timed;
    const tokensPerS = timed / r.seconds;
    results.push({
      context,
      prompt_tokens: length,
      timed_tokens: timed,
      seconds: r.seconds,
      tokens_per_s: tokensPerS,
      ratio_to_shortest: tokensPerS / (results[0]?.tokens_per_s ?? tokensPerS),
      ttft_s: r.ttft,
    });
  }
  return { results, skipped };
}
