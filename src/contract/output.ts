/** Constructors for stream chunks, like the seed's `LLMEngineOutput` helpers. */
import type { CompletionUsage, FinishReason, LLMEngineOutput } from "./types.ts";

const U32_MAX = 0xffff_ffff;

/** A non-terminal chunk carrying one token. */
export function token(id: number): LLMEngineOutput {
  return { token_ids: [id] };
}

function terminal(finish_reason: FinishReason): LLMEngineOutput {
  return { token_ids: [], finish_reason };
}

export const stop = (): LLMEngineOutput => terminal("stop");
export const length = (): LLMEngineOutput => terminal("length");
export const eos = (): LLMEngineOutput => terminal("eos");
export const cancelled = (): LLMEngineOutput => terminal("cancelled");
export const error = (message: string): LLMEngineOutput => terminal({ error: message });

/** The chunk with `ids` as its tokens. */
export function withTokens(chunk: LLMEngineOutput, ids: readonly number[]): LLMEngineOutput {
  return { ...chunk, token_ids: [...ids] };
}

/** The chunk with `usage` attached (normally the terminal one). */
export function withUsage(chunk: LLMEngineOutput, u: CompletionUsage): LLMEngineOutput {
  return { ...chunk, completion_usage: u };
}

/** Usage counts; the total saturates at 2^32-1 as Dynamo's u32 does. */
export function usage(prompt: number, completion: number): CompletionUsage {
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: Math.min(prompt + completion, U32_MAX),
  };
}

export function isTerminal(chunk: LLMEngineOutput): boolean {
  return chunk.finish_reason !== undefined;
}

/** `"cancelled"`, `"eos"`, ... or `"error"` for an error finish. */
export function finishKind(reason: FinishReason): string {
  return typeof reason === "string" ? reason : "error";
}
