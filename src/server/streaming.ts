/**
 * A completion streamed as server-sent events: a `data:` event per chunk of each choice (a part
 * with nothing to send makes none: see `worthSending`), the usage chunk when asked for, an error
 * event when the run fails after the stream began, and `[DONE]`.
 */
import { HttpError } from "./errors.ts";
import {
  type Choice,
  chunkBody,
  jobUsage,
  textAfter,
  usageChunk,
  worthSending,
} from "../openai/format.ts";
import type { Job } from "../openai/requests.ts";

/**
 * Runs every choice of a request, `onPiece` seeing each part as it comes, until `signal` aborts;
 * resolves to the completion tokens.
 */
export type RunChoices = (
  signal: AbortSignal,
  onPiece: (c: Choice, tokens: number) => void,
) => Promise<number>;

/**
 * The event stream of `job` (`id`: the chunks' id), run by `run` until it ends or the client
 * goes (`clientSignal`, or the body's reader cancelled). A constrained request
 * (`guided_decoding`) waits for its first part before the 200: an engine that refuses the
 * constraint then gets the client a 400 naming the field (this rejects with that `HttpError`),
 * not an error event.
 */
export async function eventStream(
  job: Job,
  id: string,
  run: RunChoices,
  clientSignal: AbortSignal,
): Promise<Response> {
  const cancel = new AbortController();
  const gone = AbortSignal.any([clientSignal, cancel.signal]);
  const created = Math.floor(Date.now() / 1000);
  const enc = new TextEncoder();
  const offsets = new Array<number>(job.choices).fill(0);
  const started = new Array<boolean>(job.choices).fill(false);
  const hold = job.structured.guided !== undefined;
  let resolve!: (refused?: HttpError) => void;
  const open = new Promise<HttpError | undefined>((r) => (resolve = r));
  let isOpen = false;
  const opened = (refused?: HttpError) => {
    isOpen ||= refused === undefined;
    resolve(refused);
  };
  const stream = new ReadableStream<Uint8Array>({
    start: (controller) => {
      const send = (data: unknown) => {
        if (gone.aborted) return;
        controller.enqueue(
          enc.encode(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`),
        );
      };
      let reasoning = 0;
      run(gone, (c) => {
        opened();
        reasoning += c.reasoningTokens ?? 0;
        if (!worthSending(c, !started[c.index], job.chat)) return;
        send(chunkBody(job, id, created, c, !started[c.index], offsets[c.index]!));
        started[c.index] = true;
        offsets[c.index] = textAfter(offsets[c.index]!, c.logprobs);
      }).then((tokens) => {
        opened();
        if (job.includeUsage) {
          send(usageChunk(job, id, created, jobUsage(job, tokens, reasoning)));
        }
        send("[DONE]");
      }, (e) => {
        const error = HttpError.from(e);
        if (hold && !isOpen) return opened(error);
        opened();
        // An error event, then the end marker clients wait for.
        send(error.body());
        send("[DONE]");
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
  return new Response(stream, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
  });
}
