/**
 * The Responses API over any `LLMEngine`, in process (no HTTP): `responses.create` shaped like
 * the `openai` client's, answering whole or as the Responses stream events, on the chat path
 * (`responses_request.ts` translates the body, `responses_output.ts` builds the answer), and
 * `previous_response_id` continuing a response kept in a `ResponseStore`. Kiln's server answers
 * `POST /v1/responses` with the same pieces (`src/server/responses_route.ts`).
 */
import { APIUserAbortError } from "./abort_error.ts";
import { badRequest, clip } from "./errors.ts";
import type { OpenAITarget, RequestOptions } from "./completions.ts";
import type { Piece } from "./generation.ts";
import type { Limits } from "./requests.ts";
import { newResponseId, ResponseBuilder } from "./responses_output.ts";
import {
  notStored,
  previousResponseId,
  responsesError,
  type ResponsesJob,
  responsesJob,
} from "./responses_request.ts";
import { ResponseStore } from "./responses_store.ts";
import type {
  ResponseCreateRequest,
  ResponseObject,
  ResponseStreamEvent,
} from "./responses_types.ts";
import type { ModelText } from "../text/load.ts";
import { TrackedRequest } from "./tracking.ts";
export type * from "./responses_types.ts";

/**
 * Check a Responses body and build its job, the conversation of `previous_response_id` taken
 * from `store`. Throws `EngineError` (`InvalidArgument`, `param` the field): for a bad body, and
 * {@linkcode notStored} for a `previous_response_id` that `store` does not hold.
 */
export function startResponse(
  body: unknown,
  store: ResponseStore,
  text: ModelText,
  limits: Limits,
): ResponsesJob {
  const previous = previousResponseId(body);
  const prior = previous === undefined ? [] : store.get(previous)?.items;
  if (prior === undefined) throw notStored(previous!);
  return responsesJob(body, prior, text, limits);
}

/** Keep `response` in `store` when the request allows it (`store`) and it ended with a reply. */
export function keepResponse(store: ResponseStore, rj: ResponsesJob, r: ResponseObject): void {
  if (rj.store && (r.status === "completed" || r.status === "incomplete")) {
    store.put(structuredClone(r), rj.items);
  }
}

/** A builder for `rj`'s response, with a new `resp_` id. */
export const responseBuilder = (
  rj: ResponsesJob,
  emit?: (e: ResponseStreamEvent) => void,
): ResponseBuilder =>
  new ResponseBuilder(newResponseId("resp"), rj.job.model, rj.job.promptTokens, rj.echo, emit);

/** The events of `rj`'s response as `pieces` come (`first`: one already taken). */
async function* events(
  store: ResponseStore,
  rj: ResponsesJob,
  pieces: AsyncGenerator<Piece>,
  first: IteratorResult<Piece> | undefined,
): AsyncGenerator<ResponseStreamEvent> {
  const queue: ResponseStreamEvent[] = [];
  const b = responseBuilder(rj, (e) => queue.push(e));
  b.start();
  yield* queue.splice(0);
  let tokens = 0;
  try {
    if (first && !first.done) {
      tokens += first.value.tokens;
      b.push(first.value);
      yield* queue.splice(0);
    }
    if (!first?.done) {
      for await (const p of pieces) {
        tokens += p.tokens;
        b.push(p);
        yield* queue.splice(0);
      }
    }
  } catch (e) {
    const error = responsesError(e);
    b.fail(error, tokens);
    // `response.failed`, then the error thrown (the `error` event is the wire's form of it).
    yield* queue.filter((event) => event.type !== "error");
    throw error;
  }
  keepResponse(store, rj, b.finish(tokens));
  yield* queue.splice(0);
}

/**
 * The stream of `rj`. A constrained one (`text.format`, a required or named tool) takes its
 * first piece before resolving, so an engine that refuses the constraint rejects `create`.
 */
async function streamOf(
  target: OpenAITarget,
  store: ResponseStore,
  rj: ResponsesJob,
  signal: AbortSignal,
): Promise<AsyncIterable<ResponseStreamEvent>> {
  const pieces = TrackedRequest.single(target.requests, target.engine, target.text, rj.job, signal);
  let first: IteratorResult<Piece> | undefined;
  if (rj.job.structured.guided !== undefined) {
    try {
      first = await pieces.next();
    } catch (e) {
      throw responsesError(e);
    }
  }
  return events(store, rj, pieces, first);
}

/** The whole response, or {@linkcode APIUserAbortError} as soon as `signal` aborts. */
async function wholeOf(
  target: OpenAITarget,
  store: ResponseStore,
  rj: ResponsesJob,
  signal: AbortSignal,
): Promise<ResponseObject> {
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new APIUserAbortError(signal.reason));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  const answer = (async () => {
    const b = responseBuilder(rj);
    let tokens = 0;
    try {
      for await (
        const p of TrackedRequest.single(
          target.requests,
          target.engine,
          target.text,
          rj.job,
          signal,
        )
      ) {
        tokens += p.tokens;
        b.push(p);
      }
    } catch (e) {
      throw responsesError(e);
    }
    const r = b.finish(tokens);
    keepResponse(store, rj, r);
    return r;
  })();
  answer.catch(() => {}); // after an abort, how the cancelled request ended is nobody's concern
  aborted.catch(() => {});
  try {
    return await Promise.race([answer, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

/** `responses.create` (and `retrieve`), shaped like the `openai` client's. */
export class Responses {
  /**
   * The engine, text side and name the requests run on; `store` keeps the responses that
   * `previous_response_id` continues (default: 256 of them, one hour each).
   */
  constructor(readonly target: OpenAITarget, readonly store: ResponseStore = new ResponseStore()) {}

  /**
   * Stream (`stream: true`): resolves to an async iterable of events, ending with
   * `response.completed`, `response.incomplete` (cut by `max_output_tokens`, or cancelled) or
   * `response.failed` (its iteration then throws the error). Both forms reject with an
   * `EngineError` (`InvalidArgument`, `param` the field) for a bad body or a
   * `previous_response_id` not kept.
   */
  create(
    body: ResponseCreateRequest & { stream: true },
    options?: RequestOptions,
  ): Promise<AsyncIterable<ResponseStreamEvent>>;
  /** Answer whole: resolves to the response, or rejects with the engine's error, or with
   * {@linkcode APIUserAbortError} once `options.signal` aborts. */
  create(
    body: ResponseCreateRequest & { stream?: false | null },
    options?: RequestOptions,
  ): Promise<ResponseObject>;
  create(
    body: ResponseCreateRequest,
    options: RequestOptions = {},
  ): Promise<AsyncIterable<ResponseStreamEvent> | ResponseObject> {
    try {
      const limits = { maxN: 1, contextLength: this.target.contextLength, maxLogprobs: 20 };
      const full = { ...body, model: body.model ?? this.target.model };
      const rj = startResponse(full, this.store, this.target.text, limits);
      const signal = options.signal ?? new AbortController().signal;
      return rj.job.stream
        ? streamOf(this.target, this.store, rj, signal)
        : wholeOf(this.target, this.store, rj, signal);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** A kept response; rejects with `InvalidArgument` (`param` `response_id`) when none is kept. */
  retrieve(id: string): Promise<ResponseObject> {
    const stored = this.store.get(id);
    if (stored) return Promise.resolve(structuredClone(stored.response));
    return Promise.reject(
      badRequest(`Response with id '${clip(id, 100)}' not found.`, "response_id"),
    );
  }
}
