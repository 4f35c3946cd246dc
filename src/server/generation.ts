/**
 * One choice of an OpenAI request: the engine's token stream turned into text pieces, with
 * incremental detokenisation and stop strings (a matched stop string cancels the engine
 * request; the tokens already streamed are what usage counts).
 */
import { RequestContext } from "../contract/engine.ts";
import { EngineError } from "../contract/errors.ts";
import type { LLMEngine } from "../contract/engine.ts";
import type { FinishReason } from "../contract/types.ts";
import { IncrementalDetokenizer } from "../text/detokenizer.ts";
import type { ModelText } from "../text/load.ts";
import { StopStrings } from "../text/stop_strings.ts";
import type { Job } from "./requests.ts";

/** A token's text alone, and its bytes (which the text may not show: see `tokenLabel`). */
export interface TokenText {
  token: string;
  bytes: Uint8Array;
}

export interface TokenLogprob extends TokenText {
  logprob: number;
  top: (TokenText & { logprob: number })[];
}

export interface Piece {
  text: string;
  /** The tokens behind this piece, with logprobs when asked for. */
  logprobs: TokenLogprob[];
  tokens: number;
  /** OpenAI finish reason on the last piece. */
  finish?: "stop" | "length" | "cancelled";
}

/** OpenAI's finish reason for the engine's; an `{error}` finish becomes a thrown error. */
function finishOf(reason: FinishReason): "stop" | "length" | "cancelled" {
  if (typeof reason === "object") throw new EngineError("Unknown", reason.error);
  return reason === "length" ? "length" : reason === "cancelled" ? "cancelled" : "stop";
}

/**
 * Stream choice `i` of `job`; `signal` (the client's) cancels it, also when it is already aborted
 * (the engine then ends the request `cancelled` before any token). A consumer that stops pulling
 * (`break`, `return`, `throw` in its loop) cancels the engine request too.
 */
export async function* runChoice(
  engine: LLMEngine,
  text: ModelText,
  job: Job,
  i: number,
  signal: AbortSignal,
): AsyncGenerator<Piece> {
  const ctx = new RequestContext({ signal });
  const tok = text.tokenizer;
  const detok = new IncrementalDetokenizer(tok, job.prompt, { skipSpecial: job.skipSpecial });
  const stops = new StopStrings(job.stop, job.includeStop);
  const tokenText = (id: number): TokenText => ({
    token: tok.decode([id], { skipSpecial: false }),
    bytes: tok.tokenBytes(id),
  });
  let generated = 0;
  try {
    if (job.echo !== undefined) yield { text: job.echo, logprobs: [], tokens: 0 };
    for await (const chunk of engine.generate(job.request(i), ctx)) {
      generated += chunk.token_ids.length;
      // `min_tokens` holds back stop strings as the engine holds back EOS and stop tokens.
      let out = stops.push(detok.push(chunk.token_ids), generated >= job.minTokens);
      const logprobs: TokenLogprob[] = job.logprobs === undefined ? [] : chunk.token_ids.map((
        id,
        k,
      ) => ({
        ...tokenText(id),
        logprob: chunk.log_probs?.[k] ?? 0,
        top: (chunk.top_logprobs?.[k] ?? []).map((t) => ({
          ...tokenText(t.token_id),
          logprob: t.logprob,
        })),
      }));
      if (stops.stopped !== undefined) {
        ctx.stop(); // the engine ends the request; its cancelled chunk is not ours to report
        yield { text: out, logprobs, tokens: chunk.token_ids.length, finish: "stop" };
        return;
      }
      const reason = chunk.finish_reason;
      if (reason !== undefined) out += stops.push(detok.flush()) + stops.flush();
      const piece: Piece = { text: out, logprobs, tokens: chunk.token_ids.length };
      if (reason !== undefined) piece.finish = finishOf(reason);
      yield piece;
      if (reason !== undefined) return;
    }
  } finally {
    ctx.stop();
  }
}
