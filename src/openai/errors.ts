/**
 * Errors of the OpenAI layer: a bad request is an `EngineError` (`InvalidArgument`) whose `param`
 * names the field, and any error maps to OpenAI's error object (`{message, type, param, code}`)
 * and the HTTP status the OpenAI API gives it.
 */
import { EngineError } from "../contract/errors.ts";

/** Longest error message sent back (a bad value is quoted in it, never echoed whole). */
export const MAX_MESSAGE = 512;

/** `s` cut to `max` characters, marking the cut. */
export function clip(s: string, max = MAX_MESSAGE): string {
  return s.length <= max ? s : `${s.slice(0, max)}… (${s.length - max} more characters)`;
}

/**
 * A client's value as JSON, short enough to quote in a message (`NaN` and `Infinity`, which JSON
 * has no form for, as themselves rather than JSON's `null`).
 */
export const quote = (v: unknown, max = 64): string =>
  clip(typeof v === "number" ? String(v) : JSON.stringify(v) ?? String(v), max);

/** `InvalidArgument` with `message` (clipped), about field `param` when given. */
export function badRequest(message: string, param?: string): EngineError {
  return new EngineError("InvalidArgument", clip(message), param === undefined ? {} : { param });
}

/** OpenAI's error object for an error, with the HTTP status the API answers it with. */
export interface OpenAIError {
  /** 400, 429, 503 or 500. */
  status: number;
  /** The message (clipped to {@linkcode MAX_MESSAGE}). */
  message: string;
  /** OpenAI's error type: `invalid_request_error`, `rate_limit_error`, ... */
  type: string;
  /** The request field at fault, or `null`. */
  param: string | null;
}

/**
 * The OpenAI error for anything thrown while answering a request: an `EngineError` by its Dynamo
 * type (`InvalidArgument` 400, `ResourceExhausted` 429, a gone engine 503, the rest 500), its
 * `param` kept; anything else a 500 `internal_error`. It is also what `error_type` counts in
 * `dynamo_frontend_requests_total`.
 */
export function openAIError(e: unknown): OpenAIError {
  const message = clip(e instanceof Error ? e.message : String(e));
  if (!(e instanceof EngineError)) {
    return { status: 500, message, type: "internal_error", param: null };
  }
  const of = (status: number, type: string) => ({ status, message, type, param: e.param ?? null });
  switch (e.type) {
    case "InvalidArgument":
      return of(400, "invalid_request_error");
    case "ResourceExhausted":
      return of(429, "rate_limit_error");
    case "EngineShutdown":
    case "Disconnected":
    case "CannotConnect":
      return of(503, "service_unavailable");
    default:
      return of(500, "internal_error");
  }
}

/** Sections of the engine's request whose fields the OpenAI body names without the section. */
const SECTIONS = ["sampling_options.", "stop_conditions.", "output_options."];

/**
 * An engine's refusal of a request the OpenAI layer built, about the OpenAI field the client
 * sent: the engine names the contract's fields (`sampling_options.top_p`, `token_ids`), which an
 * OpenAI client never wrote. `token_ids` is the prompt (`messages` for chat), a stop-token list
 * either way is `stop_token_ids`, `output_options.logprobs` is `top_logprobs` for chat, any other
 * sectioned field is the body's field of the same name, and `eos_token_ids` (the model's own) is
 * no field of the client's (`param` dropped). Any other error is returned as it is.
 */
export function clientError(e: EngineError, chat: boolean): EngineError {
  const param = e.param;
  if (param === undefined) return e;
  const path = param.replace(/\[\d+\]$/, "");
  const section = SECTIONS.find((s) => path.startsWith(s));
  let field: string | undefined;
  if (path === "token_ids") field = chat ? "messages" : "prompt";
  else if (path === "eos_token_ids") field = undefined;
  else if (path === "output_options.logprobs") field = chat ? "top_logprobs" : "logprobs";
  else if (path === "stop_conditions.stop_token_ids_hidden") field = "stop_token_ids";
  else if (section !== undefined) field = path.slice(section.length);
  else return e;
  return new EngineError(e.type, e.message, {
    cause: e,
    ...(field === undefined ? {} : { param: field }),
  });
}
