/**
 * The Responses API on the serving layer (`serving.ts`), once for `responses.create` in process
 * (`responses.ts`) and `POST /v1/responses` (`src/server/responses_route.ts`): a job on the chat
 * path (`startResponse` checks the body, continuing its `previous_response_id` from a
 * `ResponseStore`) run into a whole response or the Responses stream events, and kept when the
 * request allows it.
 */
import { newResponseId, ResponseBuilder } from "./responses_output.ts";
import { responsesError, type ResponsesJob } from "./responses_request.ts";
import type { ResponseStore } from "./responses_store.ts";
import type { ResponseObject, ResponseStreamEvent } from "./responses_types.ts";
import { held, type Part, type Serving } from "./serving.ts";

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

/**
 * The whole response of `rj` once it has run, kept in `store` when allowed. Rejects with the
 * run's error as one about the Responses field (`responsesError`).
 */
export async function wholeResponse(
  serving: Serving,
  store: ResponseStore,
  rj: ResponsesJob,
  signal: AbortSignal,
): Promise<ResponseObject> {
  const b = responseBuilder(rj);
  let tokens = 0;
  try {
    for await (const p of serving.parts(rj.job, signal)) {
      tokens += p.tokens;
      b.push(p);
    }
  } catch (e) {
    throw responsesError(e);
  }
  const r = b.finish(tokens);
  keepResponse(store, rj, r);
  return r;
}

/**
 * The stream events of `rj`, its response kept in `store` when allowed. A failed run ends with
 * `response.failed` and an `error` event, then the iteration throws the error (`responsesError`).
 * A constrained request (`text.format`, a required or named tool) resolves once its first part
 * came, so an engine that refuses the constraint rejects this.
 */
export async function responseEvents(
  serving: Serving,
  store: ResponseStore,
  rj: ResponsesJob,
  signal: AbortSignal,
): Promise<AsyncGenerator<ResponseStreamEvent>> {
  try {
    const parts = await held(rj.job.structured.guided !== undefined, serving.parts(rj.job, signal));
    return events(store, rj, parts);
  } catch (e) {
    throw responsesError(e);
  }
}

async function* events(
  store: ResponseStore,
  rj: ResponsesJob,
  parts: AsyncGenerator<Part>,
): AsyncGenerator<ResponseStreamEvent> {
  const queue: ResponseStreamEvent[] = [];
  const b = responseBuilder(rj, (e) => queue.push(e));
  b.start();
  yield* queue.splice(0);
  let tokens = 0;
  try {
    for await (const p of parts) {
      tokens += p.tokens;
      b.push(p);
      yield* queue.splice(0);
    }
  } catch (e) {
    const error = responsesError(e);
    b.fail(error, tokens);
    yield* queue.splice(0);
    throw error;
  }
  keepResponse(store, rj, b.finish(tokens));
  yield* queue.splice(0);
}
