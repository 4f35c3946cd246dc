/**
 * The Responses API routes of `KilnServer` (`app.ts`): `POST /v1/responses` (checked by the
 * server's completion route, so limits, auth, drain and metrics are the same, and run on the chat
 * path by the serving layer, `src/openai/serving_responses.ts`), answered whole or as server-sent
 * events (`event: <type>` and `data:` with the event's `type` and `sequence_number`, no
 * `[DONE]`), and `GET /v1/responses/{id}` for a kept response. A `previous_response_id` that is
 * not kept is a 404, as OpenAI's. */
import type { ServerOptions } from "./options.ts";
import { clip, HttpError } from "./errors.ts";
import { eventResponse, type ServerEvent } from "./sse.ts";
import type { Limits } from "../openai/requests.ts";
import {
  notStored,
  previousResponseId,
  type ResponsesJob,
  startResponse,
} from "../openai/responses_request.ts";
import { ResponseStore, STORE_DEFAULTS } from "../openai/responses_store.ts";
import type { ResponseStreamEvent } from "../openai/responses_types.ts";
import type { Serving } from "../openai/serving.ts";
import { responseEvents, wholeResponse } from "../openai/serving_responses.ts";
import type { ModelText } from "../text/load.ts";

/** The events, each named by its type; a failure's events are its end (no `[DONE]` here). */
async function* namedEvents(
  events: AsyncIterable<ResponseStreamEvent>,
): AsyncGenerator<ServerEvent> {
  try {
    for await (const e of events) yield { data: e, event: e.type };
  } catch {
    // `response.failed` and the `error` event, already sent, told the client
  }
}

/** The route's path. */
export const RESPONSES = "/v1/responses";

/** The Responses routes and the store of kept responses. */
export class ResponsesRoute {
  /** The kept responses (`storedResponses`, `storedResponseMs`). */
  readonly store: ResponseStore;

  /** Throws `RangeError` for store bounds that are not valid. */
  constructor(options: Pick<ServerOptions, "storedResponses" | "storedResponseMs">) {
    this.store = new ResponseStore(
      options.storedResponses ?? STORE_DEFAULTS.maxResponses,
      options.storedResponseMs ?? STORE_DEFAULTS.maxAgeMs,
    );
  }

  /**
   * Check a body and build its job. Throws `EngineError` (400) for a bad body, and `HttpError`
   * 404 (`previous_response_not_found`) for a `previous_response_id` not kept.
   */
  parse(body: unknown, text: ModelText, limits: Limits): ResponsesJob {
    const previous = previousResponseId(body);
    if (previous !== undefined && this.store.get(previous) === undefined) {
      const { message } = notStored(previous);
      const param = "previous_response_id";
      throw new HttpError(
        404,
        message,
        "invalid_request_error",
        param,
        "previous_response_not_found",
      );
    }
    return startResponse(body, this.store, text, limits);
  }

  /**
   * Run `rj` on `serving` and answer whole or as events until it ends or the client goes. A
   * constrained request waits for its first part before the 200, so an engine that refuses the
   * constraint is a 400 naming `text.format` or `tool_choice` (this rejects with that error),
   * not a `response.failed`.
   */
  async answer(rj: ResponsesJob, serving: Serving, clientSignal: AbortSignal): Promise<Response> {
    if (!rj.job.stream) {
      return Response.json(await wholeResponse(serving, this.store, rj, clientSignal));
    }
    return await eventResponse(
      clientSignal,
      async (signal) => namedEvents(await responseEvents(serving, this.store, rj, signal)),
    );
  }

  /**
   * `GET /v1/responses/{id}`: the kept response (404 when there is none); undefined for a path
   * that is not under `/v1/responses/`.
   */
  retrieve(pathname: string, get: boolean): Response | undefined {
    if (!pathname.startsWith(`${RESPONSES}/`)) return undefined;
    if (!get) throw HttpError.notAllowed(pathname, "GET, HEAD");
    let id = pathname.slice(RESPONSES.length + 1);
    try {
      id = decodeURIComponent(id);
    } catch {
      // not percent-encoded text: looked up as it is (and not found)
    }
    const stored = this.store.get(id);
    if (stored === undefined) {
      const message = `Response with id '${clip(id, 100)}' not found.`;
      throw new HttpError(404, message, "invalid_request_error", "response_id", "not_found");
    }
    return Response.json(stored.response);
  }
}
