/**
 * One choice of an OpenAI request: the engine's token stream turned into text pieces, with
 * incremental detokenisation and stop strings (a matched stop string cancels the engine
 * request; the tokens already streamed are what usage counts).
 */
import { RequestContext } from "../contract/engine.ts";
import { EngineError } from "../contract/errors.ts";
import { clientError } from "./errors.ts";
import type { LLMEngine } from "../contract/engine.ts";
import type { FinishReason } from "../contract/types.ts";
import { IncrementalDetokenizer } from "../text/detokenizer.ts";
import type { ModelText } from "../text/load.ts";
import { StopStrings } from "../text/stop_strings.ts";
import { ToolCallParser } from "./tool_calls.ts";
import type { ReasoningReader, ReasoningStep } from "./reasoning.ts";
import type { Job } from "./requests.ts";

/** A token's text alone, and its bytes (which the text may not show: see `tokenLabel`). */
export interface TokenText {
  /** The token decoded alone (special tokens kept). */
  token: string;
  /** The token's bytes. */
  bytes: Uint8Array;
}

/** A generated token with its logprob and the top alternatives asked for. */
export interface TokenLogprob extends TokenText {
  /** The token's log probability. */
  logprob: number;
  /** The likeliest alternatives, likeliest first. */
  top: (TokenText & { logprob: number })[];
}

/**
 * A streamed part of a call, as OpenAI's `delta.tool_calls` entries: the header (`id`, `type`,
 * `name`, empty `arguments`) first, then its arguments' text.
 */
export interface ToolCallDelta {
  /** The call's position among the choice's calls. */
  index: number;
  /** On the header: the call's id. */
  id?: string;
  /** On the header: `function`. */
  type?: "function";
  /** On the header: the function's `name`; then `arguments` text to append. */
  function: { name?: string; arguments: string };
}

/** OpenAI's finish reasons of a choice that did not fail. */
export type FinishText = "stop" | "length" | "cancelled" | "tool_calls";

/** A part of one choice's stream: new text, calls, logprobs, and the finish on the last. */
export interface Piece {
  /**
   * New text (empty while a stop string or a multi-byte character is pending); for chat whose
   * template teaches a reasoning convention, the answer's text only.
   */
  text: string;
  /** New reasoning text (chat whose template teaches a reasoning convention; see `reasoning.ts`). */
  reasoning?: string;
  /** Tokens behind this piece that were reasoning (its markers included). */
  reasoningTokens?: number;
  /** Parts of function calls read from the output (chat with `tools`). */
  toolCalls?: ToolCallDelta[];
  /** The tokens behind this piece, with logprobs when asked for. */
  logprobs: TokenLogprob[];
  /** Tokens generated behind this piece. */
  tokens: number;
  /** OpenAI finish reason on the last piece. */
  finish?: FinishText;
}

/** OpenAI's finish reason for the engine's; an `{error}` finish becomes a thrown error. */
function finishOf(reason: FinishReason): FinishText {
  if (typeof reason === "object") throw new EngineError("Unknown", reason.error);
  return reason === "length" ? "length" : reason === "cancelled" ? "cancelled" : "stop";
}

/**
 * Stream choice `i` of `job`; `signal` (the client's) cancels it, also when it is already aborted
 * (the engine then ends the request `cancelled` before any token). A consumer that stops pulling
 * (`break`, `return`, `throw` in its loop) cancels the engine request too. With `tools`, calls
 * are read from the text (`toolCalls`, each given out as soon as it is complete; finish
 * `tool_calls` when the model stopped after some; a reply cut by `max_tokens` keeps its complete
 * calls, drops the one it cut, and ends `length`). With a reasoning convention (`job.reasoning`),
 * the reasoning is read out of the text first (`reasoning`; calls are read from the answer only).
 * An engine that refuses the request's `guided_decoding` fails it with a `EngineError`
 * (`InvalidArgument`, `param` the field) naming the OpenAI field it came from.
 */
export function runChoice(
  engine: LLMEngine,
  text: ModelText,
  job: Job,
  i: number,
  signal: AbortSignal,
): AsyncGenerator<Piece> {
  let pieces = textPieces(engine, text, job, i, signal);
  const r = job.reasoning;
  if (r !== undefined) pieces = withReasoning(pieces, r.convention.reader(r.start));
  const calls = job.structured.calls;
  return calls
    ? withToolCalls(
      pieces,
      new ToolCallParser(calls.convention, calls.maxCalls, { names: calls.names }),
    )
    : pieces;
}

/**
 * The pieces with their reasoning read out. A piece's tokens are reasoning when the reader was
 * inside reasoning before it; tokens read while it was undecided (an opening marker, a header)
 * are reasoning when it then went into reasoning.
 */
async function* withReasoning(
  pieces: AsyncGenerator<Piece>,
  reader: ReasoningReader,
): AsyncGenerator<Piece> {
  let pending = 0;
  for await (const p of pieces) {
    const before = reader.mode;
    const step: ReasoningStep = reader.push(p.text);
    if (p.finish !== undefined) {
      const last = reader.finish();
      step.reasoning += last.reasoning;
      step.content += last.content;
    }
    let counted = 0;
    if (before === "reasoning") counted = p.tokens;
    else if (before === "undecided") {
      pending += p.tokens;
      if (reader.mode === "reasoning") counted = pending;
      if (reader.mode !== "undecided") pending = 0;
    }
    yield {
      ...p,
      text: step.content,
      ...(step.reasoning === "" ? {} : { reasoning: step.reasoning }),
      ...(counted === 0 ? {} : { reasoningTokens: counted }),
    };
  }
}

async function* withToolCalls(
  pieces: AsyncGenerator<Piece>,
  parser: ToolCallParser,
): AsyncGenerator<Piece> {
  let index = 0;
  for await (const p of pieces) {
    const { finish, ...rest } = p;
    const step = finish === undefined
      ? parser.push(p.text)
      : mergeSteps(parser, p.text, finish === "length");
    yield { ...rest, text: step.content };
    for (const call of step.calls) {
      const header = { index, id: parser.convention.callId(), type: "function" as const };
      yield piece([{ ...header, function: { name: call.name, arguments: "" } }]);
      yield piece([{ index, function: { arguments: call.arguments } }]);
      index++;
    }
    if (finish !== undefined) {
      yield { ...piece([]), finish: finish === "stop" && index > 0 ? "tool_calls" : finish };
    }
  }
}

const piece = (toolCalls: ToolCallDelta[]): Piece => ({
  text: "",
  logprobs: [],
  tokens: 0,
  ...(toolCalls.length > 0 ? { toolCalls } : {}),
});

function mergeSteps(parser: ToolCallParser, text: string, cut: boolean) {
  const a = parser.push(text), b = parser.finish(cut);
  return { content: a.content + b.content, calls: [...a.calls, ...b.calls] };
}

async function* textPieces(
  engine: LLMEngine,
  text: ModelText,
  job: Job,
  i: number,
  signal: AbortSignal,
): AsyncGenerator<Piece> {
  const ctx = new RequestContext({ signal });
  const tok = text.tokenizer;
  const prompt = Math.floor(i / job.n); // choice `i`'s prompt (see `Job.choices`)
  const detok = new IncrementalDetokenizer(tok, job.prompts[prompt]!, {
    skipSpecial: job.skipSpecial,
  });
  const stops = new StopStrings(job.stop, job.includeStop);
  const tokenText = (id: number): TokenText => ({
    token: tok.decode([id], { skipSpecial: false }),
    bytes: tok.tokenBytes(id),
  });
  let generated = 0;
  const guidedBy = job.structured.guidedBy;
  try {
    if (job.echo !== undefined) yield { text: job.echo[prompt]!, logprobs: [], tokens: 0 };
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
  } catch (e) {
    if (
      guidedBy !== undefined && e instanceof EngineError && e.type === "InvalidArgument" &&
      e.message.includes("guided_decoding")
    ) {
      throw EngineError.invalidField(
        guidedBy,
        `the engine refused the output constraint: ${e.message}`,
        e,
      );
    }
    throw e instanceof EngineError ? clientError(e, job.chat) : e;
  } finally {
    ctx.stop();
  }
}
