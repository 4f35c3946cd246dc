/**
 * The server-sent-events framing both streaming routes share (`streaming.ts` for completions,
 * `responses_route.ts` for the Responses API): the events of a stream the serving layer opened,
 * written as they come, the run's signal aborted when the client goes. A constrained request's
 * stream opens only once its first part came (the serving layer holds it), so a refusal of the
 * constraint rejects the opening: the client's 400, not an error event.
 */

/** The headers of an event stream. */
export const EVENT_STREAM_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
};

/** One server-sent event: `data` as it is when a string, else as JSON; `event` its type. */
export interface ServerEvent {
  /** The event's data. */
  data: unknown;
  /** The event's type, when named. */
  event?: string;
}

/**
 * An event stream of what `open` opens, given the run's signal (`clientSignal`, or the body's
 * reader cancelled). Rejects with `open`'s rejection. The events are written as they come,
 * nothing once the client has gone (the run still goes on to its end, cancelled); the stream
 * closes when they end.
 */
export async function eventResponse(
  clientSignal: AbortSignal,
  open: (signal: AbortSignal) => Promise<AsyncIterable<ServerEvent>>,
): Promise<Response> {
  const cancel = new AbortController();
  const signal = AbortSignal.any([clientSignal, cancel.signal]);
  const events = await open(signal);
  const enc = new TextEncoder();
  const write = async (controller: ReadableStreamDefaultController<Uint8Array>) => {
    try {
      for await (const { data, event } of events) {
        if (signal.aborted) continue;
        const type = event === undefined ? "" : `event: ${event}\n`;
        const text = typeof data === "string" ? data : JSON.stringify(data);
        controller.enqueue(enc.encode(`${type}data: ${text}\n\n`));
      }
    } catch (e) {
      controller.error(e); // the routes end their streams with error events: a bug lands here
    } finally {
      try {
        controller.close();
      } catch {
        // already closed by a cancel
      }
    }
  };
  const stream = new ReadableStream<Uint8Array>({
    start: (controller) => void write(controller),
    cancel: () => cancel.abort(),
  });
  return new Response(stream, { headers: EVENT_STREAM_HEADERS });
}
