/**
 * The Responses API routes of `KilnServer` (`app.ts`): `POST /v1/responses` (checked and run on
 * the chat path by the server's own completion code, so limits, auth, drain and metrics are the
 * same), answered whole or as server-sent events (`event: <type>` and `data:` with the event's
 * `type` and `sequence_number`, no `[DONE]`), and `GET /v1/responses/{id}` for a kept response.
 * A `previous_response_id` that is not kept is a 404, as OpenAI's.
 */
import type { ServerOptions } from "./options.ts";
import { clip, HttpError } from "./errors.ts";
import { eventResponse } from "./sse.ts";
import type { RunChoices } from "./streaming.ts";
import type { Limits } from "../openai/requests.ts";
import { keepResponse, responseBuilder, startResponse } from "../openai/responses.ts";
import {
  notStored,
  previousResponseId,
  responsesError,
  type ResponsesJob,
} from "../openai/responses_request.ts";
import { ResponseStore, STORE_DEFAULTS } from "../openai/responses_store.ts";
import type { ModelText } from "../text/load.ts";

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

  /** Run `rj` (`run`: the server's run of its choice) and answer whole or as events. */
  async answer(rj: ResponsesJob, run: RunChoices, clientSignal: AbortSignal): Promise<Response> {
    if (rj.job.stream) return await this.#stream(rj, run, clientSignal);
    const b = responseBuilder(rj);
    let tokens: number;
    try {
      tokens = await run(clientSignal, (c, n) => b.push({ ...c, tokens: n }));
    } catch (e) {
      throw responsesError(e);
    }
    const r = b.finish(tokens);
    keepResponse(this.store, rj, r);
    return Response.json(r);
  }

  /**
   * The events of `rj` until it ends or the client goes. A constrained request waits for its
   * first part before the 200, so an engine that refuses the constraint is a 400 naming
   * `text.format` or `tool_choice` (this rejects with that error), not a `response.failed`.
   */
  async #stream(rj: ResponsesJob, run: RunChoices, clientSignal: AbortSignal): Promise<Response> {
    return await eventResponse(rj.job.structured.guided !== undefined, clientSignal, (sink) => {
      const b = responseBuilder(rj, (e) => sink.send(e, e.type));
      b.start();
      let tokens = 0;
      return run(sink.signal, (c, n) => {
        sink.begin();
        tokens += n;
        b.push({ ...c, tokens: n });
      }).then((total) => {
        sink.begin();
        keepResponse(this.store, rj, b.finish(total));
      }, (e) => {
        const error = responsesError(e);
        if (sink.failed(HttpError.from(error))) b.fail(error, tokens);
      });
    });
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
