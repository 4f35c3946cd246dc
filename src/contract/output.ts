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

/** A terminal chunk finishing with `stop` (a stop string or stop token matched). */
export const stop = (): LLMEngineOutput => terminal("stop");
/** A terminal chunk finishing with `length` (`max_tokens` or the context was reached). */
export const length = (): LLMEngineOutput => terminal("length");
/** A terminal chunk finishing with `eos` (the model produced an EOS token). */
export const eos = (): LLMEngineOutput => terminal("eos");
/** A terminal chunk finishing with `cancelled`. */
export const cancelled = (): LLMEngineOutput => terminal("cancelled");
/** A terminal chunk finishing with `{ error: message }`. */
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

/** Whether the chunk ends its stream (it has a `finish_reason`). */
export function isTerminal(chunk: LLMEngineOutput): boolean {
  return chunk.finish_reason !== undefined;
}

/** `"cancelled"`, `"eos"`, ... or `"error"` for an error finish. */
export function finishKind(reason: FinishReason): string {
  return typeof reason === "string" ? reason : "error";
}
