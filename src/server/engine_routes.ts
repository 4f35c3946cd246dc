/**
 * The token-level engine endpoint: what a Dynamo worker shim, or any router that tokenizes for
 * itself, drives (`integrations/dynamo/`). No text crosses it, only Dynamo's wire JSON.
 *
 * - `POST /v1/engine/generate`: a `PreprocessedRequest` (Dynamo's snake_case JSON, read by the
 *   contract's `parseRequest`) in; `LLMEngineOutput` chunks out as NDJSON
 *   (`application/x-ndjson`: one chunk's wire JSON per line, flushed as each comes), the last
 *   carrying the finish reason. A request the engine refuses before its first chunk (a bad
 *   field, a token outside the vocabulary, a prompt the cache cannot hold) is an HTTP error
 *   whose body names the `EngineError` type in `error.code`; one that fails later ends with a
 *   chunk whose `finish_reason` is `{"error": "<type>: <message>"}` (Dynamo's `Error` reason).
 *   Closing the response cancels the request in the engine, and only that request: the
 *   client's `x-request-id` is a label (the context's `requestId`, echoed back on the
 *   response; the server makes one when absent), never a key, so another client sending the
 *   same id reaches nothing of this request.
 * - `GET /v1/engine/config`: the `EngineConfig` the engine's `start()` returned.
 *
 * @module
 */
import { type LLMEngine, RequestContext } from "../contract/engine.ts";
import { EngineError, type ErrorType, isErrorType } from "../contract/errors.ts";
import type { EngineConfig, LLMEngineOutput } from "../contract/types.ts";
import { parseRequest, toWire } from "../contract/wire.ts";
import type { RequestTracker } from "../metrics/request_metrics.ts";
import { openAIError } from "../openai/errors.ts";
import { HttpError } from "./errors.ts";

/** The engine endpoint's paths. */
export const ENGINE_GENERATE = "/v1/engine/generate";
export const ENGINE_CONFIG = "/v1/engine/config";

/** Dynamo's error type for an HTTP refusal that is not the engine's. */
function typeOfStatus(status: number): ErrorType {
  if (status === 429) return "ResourceExhausted";
  if (status === 503) return "EngineShutdown";
  if (status === 408) return "ResponseTimeout";
  return status >= 400 && status < 500 ? "InvalidArgument" : "Unknown";
}

/**
 * The JSON error response for `e`, with Dynamo's error type in `error.code`: the
 * `EngineError`'s, or for the server's own refusals (a body that is not JSON, too large, too
 * many requests, shutting down) the type that status stands for.
 */
export function engineError(e: unknown): HttpError {
  const error = HttpError.from(e);
  const type = e instanceof EngineError ? e.type : typeOfStatus(error.status);
  return new HttpError(error.status, error.message, error.type, error.param, type)
    .with(error.headers);
}

/** `GET /v1/engine/config`. */
export function configResponse(config: EngineConfig): Response {
  return Response.json(config);
}

/** Starts the `dynamo_frontend_*` accounting of a parsed request of `promptTokens` tokens. */
export type TrackRequest = (promptTokens: number) => RequestTracker;

/** How an engine-route stream ended, for `dynamo_frontend_requests_total`. */
function finishTracked(
  tracker: RequestTracker | undefined,
  last: LLMEngineOutput | undefined,
  signal: AbortSignal,
): void {
  const reason = last?.finish_reason;
  if (typeof reason === "object" && reason !== null) {
    // Dynamo's `Error` reason reads `<type>: <message>`.
    const type = reason.error.split(":", 1)[0];
    const error = new EngineError(isErrorType(type) ? type : "Unknown", reason.error);
    tracker?.finish("error", openAIError(error).type);
  } else if (reason === "cancelled" || reason === undefined || signal.aborted) {
    tracker?.finish("cancelled");
  } else tracker?.finish("success");
}

/**
 * Run `body` (the request's parsed JSON) on `engine` and stream its chunks as NDJSON; rejects,
 * before any byte is sent, when the request is malformed or the engine refuses it at once.
 * `signal` cancels it (the client went away, or the server is shutting down); `done` settles
 * when the stream has ended either way. `track`, when given, counts the request from the moment
 * it parses (a refusal at admission as an `error`).
 */
export async function generateResponse(
  engine: LLMEngine,
  body: unknown,
  requestId: string,
  signal: AbortSignal,
  track?: TrackRequest,
): Promise<{ response: Response; done: Promise<void> }> {
  const request = parseRequest(body);
  const tracker = track?.(request.token_ids.length);
  const ctx = new RequestContext({ requestId, signal });
  const chunks = engine.generate(request, ctx)[Symbol.asyncIterator]();
  // The first chunk before the 200: a request refused at admission gets a status, not a line.
  let first: IteratorResult<LLMEngineOutput>;
  try {
    first = await chunks.next();
  } catch (e) {
    tracker?.finish("error", openAIError(e).type);
    throw e;
  }
  let last: LLMEngineOutput | undefined;
  const enc = new TextEncoder();
  let finished!: () => void;
  const done = new Promise<void>((r) => (finished = r));
  let gone = false;
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (c: LLMEngineOutput) => {
        last = c;
        if (c.token_ids.length > 0) tracker?.tokens(c.token_ids.length);
        if (!gone) controller.enqueue(enc.encode(`${JSON.stringify(toWire(c))}\n`));
      };
      try {
        if (!first.done) send(first.value);
        for (let r = first; !r.done && r.value.finish_reason === undefined;) {
          r = await chunks.next();
          if (!r.done) send(r.value);
        }
      } catch (e) {
        const err = EngineError.from(e);
        send({ token_ids: [], finish_reason: { error: `${err.type}: ${err.message}` } });
      } finally {
        finishTracked(tracker, last, ctx.signal);
        await chunks.return?.();
        try {
          controller.close();
        } catch {
          // already cancelled by the client
        }
        finished();
      }
    },
    cancel() {
      gone = true;
      ctx.stop();
    },
  });
  return {
    response: new Response(stream, {
      headers: {
        "content-type": "application/x-ndjson",
        "cache-control": "no-cache",
        "x-request-id": requestId,
      },
    }),
    done,
  };
}
