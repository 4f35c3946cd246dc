/**
 * The Responses API over any `LLMEngine`, in process (no HTTP): `responses.create` shaped like
 * the `openai` client's, answering whole or as the Responses stream events, on the chat path
 * (`responses_request.ts` translates the body, `responses_output.ts` builds the answer), and
 * `previous_response_id` continuing a response kept in a `ResponseStore`: a thin wrapper over the
 * serving layer (`serving_responses.ts`), which Kiln's server answers `POST /v1/responses` with
 * too (`src/server/responses_route.ts`).
 */
import { badRequest, clip } from "./errors.ts";
import type { OpenAITarget, RequestOptions } from "./completions.ts";
import { ResponseStore } from "./responses_store.ts";
import type {
  ResponseCreateRequest,
  ResponseObject,
  ResponseStreamEvent,
} from "./responses_types.ts";
import { Serving, untilAborted } from "./serving.ts";
import { startResponse } from "./responses_request.ts";
import { responseEvents, wholeResponse } from "./serving_responses.ts";
export { startResponse } from "./responses_request.ts";
export { keepResponse, responseBuilder } from "./serving_responses.ts";
export type * from "./responses_types.ts";

/** The events as `responses.create` gives them: the `error` event is the error thrown instead. */
async function* withoutErrorEvent(
  events: AsyncGenerator<ResponseStreamEvent>,
): AsyncGenerator<ResponseStreamEvent> {
  for await (const e of events) if (e.type !== "error") yield e;
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
      const serving = new Serving(this.target);
      return rj.job.stream
        ? responseEvents(serving, this.store, rj, signal).then(withoutErrorEvent)
        : untilAborted(wholeResponse(serving, this.store, rj, signal), signal);
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
