/**
 * The kit's cancellation checks: a request cancelled before its first pull, one cancelled in the
 * middle of its stream (after chunks were read, when the engine is busy generating), and one
 * whose signal had already fired before `generate()` was called. Each must end with a terminal
 * `cancelled` chunk within the cancel deadline; the pre-aborted one before any token.
 */
import { type GenerateContext, RequestContext } from "../contract/engine.ts";
import type { LLMEngineOutput } from "../contract/types.ts";
import { ConformanceFailure, describe, type FailureKind } from "./failure.ts";
import { collect, LONG_MAX_TOKENS, request, type State, within } from "./support.ts";

/** Chunks read before the mid-stream check cancels. */
const READ_BEFORE_CANCEL = 2;

/** Cancel before the first pull: the engine's first look at the signal sees it. */
export async function cancellation(s: State): Promise<void> {
  const ctx = new RequestContext();
  const req = request(s.config!.model, s.opts.prompt, LONG_MAX_TOKENS);
  let stream: AsyncIterable<LLMEngineOutput>;
  try {
    stream = s.engine.generate(req, ctx as GenerateContext);
  } catch (e) {
    throw new ConformanceFailure("GenerateFailed", describe(e));
  }
  // Cancel before the first pull: the engine's first look at the signal sees it, whatever its speed.
  ctx.stop();
  const ms = s.opts.cancelDeadlineMs;
  const chunks = await within(
    collect(() => stream),
    ms,
    () => new ConformanceFailure("CancellationNotObserved", `${ms} ms`),
  );
  const last = chunks[chunks.length - 1];
  if (last === undefined) throw new ConformanceFailure("NoChunksYielded");
  if (last.finish_reason !== "cancelled") {
    throw new ConformanceFailure(
      "CancellationIgnored",
      JSON.stringify(last.finish_reason ?? null),
    );
  }
}

/** A stream read chunk by chunk, each pull bounded; on a timeout it stops pulling. */
class Reader {
  readonly chunks: LLMEngineOutput[] = [];
  readonly #it: AsyncIterator<LLMEngineOutput>;
  done = false;

  constructor(stream: AsyncIterable<LLMEngineOutput>) {
    this.#it = stream[Symbol.asyncIterator]();
  }

  get terminal(): LLMEngineOutput | undefined {
    return this.chunks.find((c) => c.finish_reason !== undefined);
  }

  get tokens(): number {
    return this.chunks.reduce((n, c) => n + c.token_ids.length, 0);
  }

  /**
   * Pull until `enough()`, the end of the stream, or `ms` (then `onTimeout()` is thrown). A throw
   * of the engine is `GenerateFailed` before any chunk, `StreamYieldedError` after one.
   */
  async readUntil(enough: () => boolean, ms: number, onTimeout: () => Error): Promise<void> {
    const deadline = performance.now() + ms;
    while (!this.done && !enough()) {
      let r: IteratorResult<LLMEngineOutput>;
      try {
        r = await within(this.#it.next(), Math.max(0, deadline - performance.now()), onTimeout);
      } catch (e) {
        if (e instanceof ConformanceFailure) throw e;
        const kind: FailureKind = this.chunks.length === 0
          ? "GenerateFailed"
          : "StreamYieldedError";
        throw new ConformanceFailure(kind, describe(e));
      }
      if (r.done) this.done = true;
      else this.chunks.push(r.value);
    }
  }

  /** Stop pulling: the engine's stream ends at its next yield (a consumer that went away). */
  close(): void {
    if (!this.done) Promise.resolve(this.#it.return?.()).catch(() => {});
    this.done = true;
  }
}

function open(s: State, ctx: RequestContext): Reader {
  const req = request(s.config!.model, s.opts.prompt, LONG_MAX_TOKENS);
  try {
    return new Reader(s.engine.generate(req, ctx));
  } catch (e) {
    throw new ConformanceFailure("GenerateFailed", describe(e));
  }
}

/**
 * Cancel after chunks were read, while the engine is generating: an engine that looks at the
 * signal only when a request starts, or only between requests, never ends this one.
 */
export async function cancellationMidStream(s: State): Promise<void> {
  const kind = "MidStreamCancellationNotObserved";
  const ctx = new RequestContext();
  const reader = open(s, ctx);
  try {
    const step = s.opts.stepTimeoutMs;
    await reader.readUntil(
      () => reader.chunks.length >= READ_BEFORE_CANCEL || reader.terminal !== undefined,
      step,
      () =>
        new ConformanceFailure("GenerateFailed", `no ${READ_BEFORE_CANCEL} chunks in ${step} ms`),
    );
    const early = reader.terminal;
    if (early !== undefined || reader.done) {
      const why = JSON.stringify(early?.finish_reason ?? null);
      throw new ConformanceFailure(
        kind,
        `the stream ended (finish_reason ${why}) after ${reader.chunks.length} chunks, before the ` +
          `cancel, although max_tokens was ${LONG_MAX_TOKENS}`,
      );
    }
    ctx.stop();
    const ms = s.opts.cancelDeadlineMs;
    await reader.readUntil(
      () => reader.terminal !== undefined,
      ms,
      () => new ConformanceFailure(kind, `no terminal chunk within ${ms} ms of the cancel`),
    );
    const last = reader.terminal;
    if (last?.finish_reason !== "cancelled") {
      throw new ConformanceFailure(
        kind,
        `the stream ended with finish_reason ${JSON.stringify(last?.finish_reason ?? null)}`,
      );
    }
  } finally {
    reader.close();
  }
}

/**
 * A request whose signal fired before `generate()` was called: it must end `cancelled` before any
 * token. An engine that only listens for a future `abort` event never hears this one.
 */
export async function cancellationPreAborted(s: State): Promise<void> {
  const kind = "PreAbortedRequestNotCancelled";
  const ctx = new RequestContext();
  ctx.stop();
  const reader = open(s, ctx);
  try {
    const ms = s.opts.cancelDeadlineMs;
    await reader.readUntil(
      () => reader.tokens > 0 || reader.terminal !== undefined,
      ms,
      () => new ConformanceFailure(kind, `no terminal chunk within ${ms} ms`),
    );
    if (reader.tokens > 0) {
      throw new ConformanceFailure(kind, `it yielded ${reader.tokens} token(s)`);
    }
    const last = reader.terminal;
    if (last === undefined) throw new ConformanceFailure(kind, "it ended without a terminal chunk");
    if (last.finish_reason !== "cancelled") {
      throw new ConformanceFailure(
        kind,
        `it ended with finish_reason ${JSON.stringify(last.finish_reason ?? null)}`,
      );
    }
  } finally {
    reader.close();
  }
}
