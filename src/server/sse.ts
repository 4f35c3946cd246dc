/**
 * The server-sent-events answer both streaming routes share (`streaming.ts` for completions,
 * `responses_route.ts` for the Responses API): the body the route's writer fills, the run stopped
 * when the client goes, and a held start for a constrained request, whose refusal is the client's
 * 400 rather than an error event.
 */
import { HttpError } from "./errors.ts";

/** The headers of an event stream. */
export const EVENT_STREAM_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
};

/** What a route's writer gets to fill an event stream with. */
export interface EventSink {
  /** Aborts when the client goes (its signal, or the body's reader cancelled): the run's signal. */
  readonly signal: AbortSignal;
  /**
   * Sends one event: `data` as it is when a string, else as JSON, and `event` its type when
   * named; nothing once the client has gone.
   */
  send(data: unknown, event?: string): void;
  /** The stream began: a held answer goes out as a 200 now (later calls change nothing). */
  begin(): void;
  /**
   * The run failed with `error`. Before a held stream began, the answer is refused with it (the
   * response's promise rejects) and this returns false; otherwise the stream begins and this
   * returns true, for the writer to send its error events.
   */
  failed(error: HttpError): boolean;
}

/**
 * An event stream filled by `write`, which starts at once and whose promise settling ends the
 * stream; `clientSignal` is the client's. With `hold` (a constrained request) the response waits
 * until the stream begins, so an engine that refuses the constraint before its first part gets
 * the client that `HttpError` (this rejects with it), not an error event.
 */
export async function eventResponse(
  hold: boolean,
  clientSignal: AbortSignal,
  write: (sink: EventSink) => Promise<void>,
): Promise<Response> {
  const cancel = new AbortController();
  const signal = AbortSignal.any([clientSignal, cancel.signal]);
  const enc = new TextEncoder();
  let resolve!: (refused?: HttpError) => void;
  const open = new Promise<HttpError | undefined>((r) => (resolve = r));
  let isOpen = false;
  const begin = () => {
    isOpen = true;
    resolve();
  };
  const stream = new ReadableStream<Uint8Array>({
    start: (controller) => {
      write({
        signal,
        send: (data, event) => {
          if (signal.aborted) return;
          const type = event === undefined ? "" : `event: ${event}\n`;
          const text = typeof data === "string" ? data : JSON.stringify(data);
          controller.enqueue(enc.encode(`${type}data: ${text}\n\n`));
        },
        begin,
        failed: (error) => {
          if (hold && !isOpen) {
            resolve(error);
            return false;
          }
          begin();
          return true;
        },
      }).finally(() => {
        try {
          controller.close();
        } catch {
          // already closed by a cancel
        }
      });
    },
    cancel: () => cancel.abort(),
  });
  if (hold) {
    const refused = await open;
    if (refused) throw refused;
  }
  return new Response(stream, { headers: EVENT_STREAM_HEADERS });
}
