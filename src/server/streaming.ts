/**
 * A completion streamed as server-sent events: a `data:` event per chunk the serving layer gives
 * (`Serving.stream`: each choice's chunks, the usage chunk when asked for), an error event when
 * the run fails after the stream began, and `[DONE]`.
 */
import { HttpError } from "./errors.ts";
import { eventResponse, type ServerEvent } from "./sse.ts";
import type { Job } from "../openai/requests.ts";
import type { Serving } from "../openai/serving.ts";

/** The chunks as events, then `[DONE]`; a failure is an error event, then `[DONE]`. */
async function* completionEvents(chunks: AsyncIterable<unknown>): AsyncGenerator<ServerEvent> {
  try {
    for await (const chunk of chunks) yield { data: chunk };
  } catch (e) {
    // An error event, then the end marker clients wait for.
    yield { data: HttpError.from(e).body() };
  }
  yield { data: "[DONE]" };
}

/**
 * The event stream of `job` run by `serving` until it ends or the client goes (`clientSignal`,
 * or the body's reader cancelled). A constrained request (`guided_decoding`) waits for its
 * first part before the 200: an engine that refuses the constraint then gets the client a 400
 * naming the field (this rejects with that error), not an error event.
 */
export function eventStream(
  serving: Serving,
  job: Job,
  clientSignal: AbortSignal,
): Promise<Response> {
  return eventResponse(
    clientSignal,
    async (signal) => completionEvents(await serving.stream(job, signal)),
  );
}
