/**
 * What a paged KV cache can hold, from the numbers an engine reports in its `EngineConfig`:
 * the one rule engines (WebGPU, mock) and the server share for a request that can never fit.
 *
 * A sequence of `t` tokens needs `ceil(t / block_size)` blocks, so one sequence can reach at most
 * `total_kv_blocks × block_size` tokens even with the cache to itself. A request whose prompt
 * plus the least it must generate (one token, or `min_tokens`) exceeds that can never run and is
 * refused; one that would merely grow past it ends with finish reason `length` there, as it does
 * at the context length.
 */
import type { EngineConfig, PreprocessedRequest } from "./types.ts";

/** A paged KV cache's size: blocks, and tokens per block. */
export interface KvGeometry {
  /** Blocks in the cache. */
  readonly numBlocks: number;
  /** Tokens per block. */
  readonly blockSize: number;
}

/** The cache an `EngineConfig` reports, when it reports both its block count and block size. */
export function kvGeometry(config: EngineConfig): KvGeometry | undefined {
  const numBlocks = config.total_kv_blocks, blockSize = config.kv_cache_block_size;
  if (numBlocks === undefined || blockSize === undefined || numBlocks <= 0 || blockSize <= 0) {
    return undefined;
  }
  return { numBlocks, blockSize };
}

/** Tokens one sequence may reach: the context length, or the whole cache when that is smaller. */
export function sequenceLimit(context: number, kv?: KvGeometry): number {
  return kv === undefined ? context : Math.min(context, kv.numBlocks * kv.blockSize);
}

/** Why a request can never fit the cache: the field to blame and a message naming the numbers. */
export interface KvMisfit {
  /** `token_ids` (the prompt alone is too long) or `min_tokens` (the prompt fits, not the minimum). */
  field: "token_ids" | "min_tokens";
  /** What does not fit, with the numbers (prompt, tokens, blocks needed, blocks in the cache). */
  message: string;
}

/**
 * Whether `request` could ever run in a cache of `kv` with nothing else in it: its prompt plus
 * the tokens it must generate (at least one, or `min_tokens` when smaller than `max_tokens`)
 * must fit. Returns why not, or undefined when it fits.
 */
export function kvMisfit(
  request: Pick<PreprocessedRequest, "token_ids" | "stop_conditions">,
  kv: KvGeometry,
): KvMisfit | undefined {
  const prompt = request.token_ids.length;
  const stop = request.stop_conditions;
  const must = Math.max(1, Math.min(stop.min_tokens ?? 0, stop.max_tokens ?? Infinity));
  const tokens = prompt + must;
  const needed = Math.ceil(tokens / kv.blockSize);
  if (needed <= kv.numBlocks) return undefined;
  const cache = `the KV cache holds ${kv.numBlocks * kv.blockSize} tokens (${kv.numBlocks} ` +
    `blocks of ${kv.blockSize})`;
  return must > 1
    ? {
      field: "min_tokens",
      message: `a ${prompt}-token prompt plus min_tokens ${must} is ${tokens} tokens, ` +
        `${needed} KV blocks; ${cache}`,
    }
    : {
      field: "token_ids",
      message: `a ${prompt}-token prompt and one generated token need ${needed} KV blocks; ` +
        cache,
    };
}
