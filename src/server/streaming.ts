/**
 * A completion streamed as server-sent events: a `data:` event per chunk of each choice (a part
 * with nothing to send makes none: see `worthSending`), the usage chunk when asked for, an error
 * event when the run fails after the stream began, and `[DONE]`.
 */
import { HttpError } from "./errors.ts";
import { eventResponse } from "./sse.ts";
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
  const created = Math.floor(Date.now() / 1000);
  const offsets = new Array<number>(job.choices).fill(0);
  const started = new Array<boolean>(job.choices).fill(false);
  return await eventResponse(job.structured.guided !== undefined, clientSignal, (sink) => {
    let reasoning = 0;
    return run(sink.signal, (c) => {
      sink.begin();
      reasoning += c.reasoningTokens ?? 0;
      if (!worthSending(c, !started[c.index], job.chat)) return;
      sink.send(chunkBody(job, id, created, c, !started[c.index], offsets[c.index]!));
      started[c.index] = true;
      offsets[c.index] = textAfter(offsets[c.index]!, c.logprobs);
    }).then((tokens) => {
      sink.begin();
      if (job.includeUsage) {
        sink.send(usageChunk(job, id, created, jobUsage(job, tokens, reasoning)));
      }
      sink.send("[DONE]");
    }, (e) => {
      const error = HttpError.from(e);
      if (!sink.failed(error)) return;
      // An error event, then the end marker clients wait for.
      sink.send(error.body());
      sink.send("[DONE]");
    });
  });
}
