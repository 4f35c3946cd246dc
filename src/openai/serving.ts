/**
 * The OpenAI drive, written once (vLLM's serving layer under its router): a checked `Job` run on
 * an engine as the parts of its choices (counted in `dynamo_frontend_*`, cut by shutdown), then
 * gathered into a whole answer with its usage or shaped into a chunk stream ending with the usage
 * chunk; a constrained stream held until its first part, so that an engine refusing the
 * constraint refuses the call; and the one KV-fit check of a request. `ChatCompletions` and
 * `Completions` (`completions.ts`), the Responses API (`serving_responses.ts`) and the server's
 * routes (`src/server/`) are thin wrappers over it.
 */
import type { LLMEngine } from "../contract/engine.ts";
import { type KvGeometry, kvMisfit } from "../contract/kv_capacity.ts";
import type { RequestMetrics } from "../metrics/request_metrics.ts";
import type { ModelText } from "../text/load.ts";
import { APIUserAbortError } from "./abort_error.ts";
import { badRequest } from "./errors.ts";
import {
  addPart,
  type Choice,
  choiceOf,
  chunkBody,
  jobUsage,
  responseBody,
  textAfter,
  usageChunk,
  worthSending,
} from "./format.ts";
import type { Job } from "./requests.ts";
import { TrackedRequest } from "./tracking.ts";

/** The finish reason of a choice cut short by shutdown (vLLM's for an aborted request). */
export const ABORT_FINISH = "abort";

/** The requests in flight, as a server counts them for its limits and its drain. */
export interface RunLedger {
  /** A run starts now; the function returned ends it (called once, when its parts end). */
  begin(): () => void;
}

/** What the serving layer runs jobs on. */
export interface ServingTarget {
  /** The engine that generates (started). */
  engine: LLMEngine;
  /** The model's tokenizer and chat template. */
  text: ModelText;
  /** Counts each request in `dynamo_frontend_*` when given. */
  requests?: RequestMetrics;
  /** The engine's KV cache, when known: a job it could never hold is refused (`checkFits`). */
  kv?: KvGeometry | undefined;
  /** Shutdown: cuts every job, each choice then ending with finish reason `abort`. */
  shutdown?: AbortSignal;
  /** Where each run is counted from its start to its end (a server's in-flight requests). */
  runs?: RunLedger;
}

/** A part of one choice's stream as it comes: the choice's part, and the tokens behind it. */
export interface Part extends Choice {
  /** Tokens generated behind this part. */
  tokens: number;
}

/** A response body or stream chunk, as JSON. */
export type Body = Record<string, unknown>;

/** An id no client can guess or repeat: every request's own, never one a client chose. */
export const newId = (prefix: string): string =>
  `${prefix}-${crypto.randomUUID().replaceAll("-", "")}`;

const now = () => Math.floor(Date.now() / 1000);

/** The serving layer over one target: jobs in, whole answers or chunk streams out. */
export class Serving {
  /** The engine, text side and counters jobs run on. */
  constructor(readonly target: ServingTarget) {}

  /**
   * Refuse a job the engine's whole KV cache could never hold (when the target knows the cache):
   * retrying cannot help, so it is an `InvalidArgument` (400, not 429), about `promptField` (the
   * route's name of the prompt) or `min_tokens`.
   */
  checkFits(job: Job, promptField: string): void {
    const kv = this.target.kv;
    const misfit = kv && kvMisfit(job.request(job.longest), kv);
    if (misfit) {
      throw badRequest(misfit.message, misfit.field === "min_tokens" ? "min_tokens" : promptField);
    }
  }

  /**
   * Every choice of `job`, as parts in the order they come (`index` tells the choice), counted
   * as one request from now. `signal` (the client's) cancels it; shutdown cuts it too, and each
   * choice then ends with {@linkcode ABORT_FINISH}. A single choice is pulled as its consumer
   * pulls; a consumer that stops pulling cancels it. Throws the first choice's error. With a
   * `runs` ledger the run counts from this call until the parts end, so they must be pulled.
   */
  parts(job: Job, signal: AbortSignal): AsyncGenerator<Part> {
    const { shutdown, runs } = this.target;
    const end = runs?.begin();
    return this.#parts(job, shutdown ? AbortSignal.any([signal, shutdown]) : signal, end);
  }

  async *#parts(job: Job, signal: AbortSignal, end?: () => void): AsyncGenerator<Part> {
    try {
      const tracked = new TrackedRequest(this.target.requests, job);
      const choices = Array.from(
        { length: job.choices },
        (_, i) => this.#choice(tracked, i, signal),
      );
      yield* tracked.counted(choices.length === 1 ? choices[0]! : merged(choices), signal);
    } finally {
      end?.();
    }
  }

  async *#choice(tracked: TrackedRequest, i: number, signal: AbortSignal): AsyncGenerator<Part> {
    const { engine, text, shutdown } = this.target;
    let finished = false;
    for await (const p of tracked.choice(engine, text, i, signal)) {
      let finish: string | null = p.finish ?? null;
      if (finish === "cancelled" && shutdown?.aborted) finish = ABORT_FINISH;
      finished ||= finish !== null;
      yield { ...choiceOf(i, p, finish), tokens: p.tokens };
    }
    if (!finished && shutdown?.aborted) {
      yield { index: i, text: "", logprobs: [], finish: ABORT_FINISH, tokens: 0 };
    }
  }

  /** The whole answer of `job` (every choice gathered, with usage) once it has run. */
  async whole(job: Job, signal: AbortSignal): Promise<Body> {
    const choices: Choice[] = Array.from({ length: job.choices }, (_, index) => ({
      index,
      text: "",
      logprobs: [],
      finish: null,
    }));
    let tokens = 0;
    for await (const p of this.parts(job, signal)) {
      tokens += p.tokens;
      addPart(choices[p.index]!, p);
    }
    const reasoning = choices.reduce((sum, c) => sum + (c.reasoningTokens ?? 0), 0);
    const id = newId(job.chat ? "chatcmpl" : "cmpl");
    return responseBody(job, id, now(), choices, jobUsage(job, tokens, reasoning));
  }

  /**
   * The chunk stream of `job` (a part with nothing to send makes none: see `worthSending`), and
   * the usage chunk when asked for. A constrained job (`guided_decoding`) resolves once its first
   * part came, so an engine refusing the constraint rejects this; iterating throws a later error.
   */
  stream(job: Job, signal: AbortSignal): Promise<AsyncGenerator<Body>> {
    return held(job.structured.guided !== undefined, this.parts(job, signal))
      .then((parts) => chunks(job, parts));
  }
}

/** The chunks of `job` for its parts, then its usage chunk when asked for. */
async function* chunks(job: Job, parts: AsyncIterable<Part>): AsyncGenerator<Body> {
  const id = newId(job.chat ? "chatcmpl" : "cmpl");
  const created = now();
  const offsets = new Array<number>(job.choices).fill(0);
  const started = new Array<boolean>(job.choices).fill(false);
  let tokens = 0, reasoning = 0;
  for await (const c of parts) {
    tokens += c.tokens;
    reasoning += c.reasoningTokens ?? 0;
    const first = !started[c.index];
    if (!worthSending(c, first, job.chat)) continue;
    yield chunkBody(job, id, created, c, first, offsets[c.index]!);
    started[c.index] = true;
    offsets[c.index] = textAfter(offsets[c.index]!, c.logprobs);
  }
  if (job.includeUsage) yield usageChunk(job, id, created, jobUsage(job, tokens, reasoning));
}

/**
 * `stream` as it is, or (`hold`) once its first item came: the first `next()` is taken before
 * this resolves, so its error rejects this.
 */
export async function held<T>(
  hold: boolean,
  stream: AsyncGenerator<T>,
): Promise<AsyncGenerator<T>> {
  if (!hold) return stream;
  const first = await stream.next();
  return (async function* () {
    try {
      if (first.done) return;
      yield first.value;
      yield* stream;
    } finally {
      await stream.return(undefined);
    }
  })();
}

/**
 * The items of every source in the order they come, each source pulled on its own; the first
 * source to fail fails the whole (after the items that came before it). Ending early, or failing,
 * stops the other sources.
 */
export async function* merged<T>(sources: AsyncGenerator<T>[]): AsyncGenerator<T> {
  const queue: T[] = [];
  let failure: { error: unknown } | undefined;
  let left = sources.length;
  let wake = () => {};
  const pump = async (source: AsyncGenerator<T>) => {
    try {
      for await (const item of source) {
        queue.push(item);
        wake();
      }
    } catch (error) {
      failure ??= { error };
    } finally {
      left--;
      wake();
    }
  };
  for (const source of sources) void pump(source);
  try {
    while (true) {
      if (queue.length > 0) yield queue.shift()!;
      else if (failure) throw failure.error;
      else if (left === 0) return;
      else await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    for (const source of sources) void source.return(undefined);
  }
}

/**
 * `answer`, or a rejection with {@linkcode APIUserAbortError} as soon as `signal` aborts (the
 * request then ends in the engine as cancelled, in the background).
 */
export async function untilAborted<T>(answer: Promise<T>, signal: AbortSignal): Promise<T> {
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new APIUserAbortError(signal.reason));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  answer.catch(() => {}); // after an abort, how the cancelled request ended is nobody's concern
  aborted.catch(() => {});
  try {
    return await Promise.race([answer, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
