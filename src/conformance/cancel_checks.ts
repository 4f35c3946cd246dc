/**
 * The kit's cancellation checks: a request cancelled before its first pull, one cancelled in the
 * middle of its stream (after chunks were read, when the engine is busy generating), and one
 * whose signal had already fired before `generate()` was called. Each must end with a terminal
 * `cancelled` chunk within the cancel deadline; the pre-aborted one before any token.
 */
import { type GenerateContext, RequestContext } from "../contract/engine.ts";
import type { LLMEngineOutput } from "../contract/types.ts";
import { type AssertionId, failAt } from "./assertions.ts";
import { ConformanceFailure, describe } from "./failure.ts";
import { collect, type ErrorIds, LONG_MAX_TOKENS, request, type State, within } from "./support.ts";

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
    throw failAt("cancellation/generate-sync", describe(e));
  }
  // Cancel before the first pull: the engine's first look at the signal sees it, whatever its speed.
  ctx.stop();
  const ms = s.opts.cancelDeadlineMs;
  const chunks = await within(
    collect(() => stream, {
      before: "cancellation/no-error-before-chunk",
      after: "cancellation/no-error-after-chunk",
    }),
    ms,
    () => failAt("cancellation/ends", `${ms} ms`),
  );
  const last = chunks[chunks.length - 1];
  if (last === undefined) throw failAt("cancellation/chunks");
  const terminals = chunks.filter((c) => c.finish_reason !== undefined).length;
  if (terminals > 1 || (terminals === 1 && last.finish_reason === undefined)) {
    throw failAt("cancellation/terminal-last", `${terminals} terminal chunks of ${chunks.length}`);
  }
  if (last.finish_reason !== "cancelled") {
    throw failAt("cancellation/finish", JSON.stringify(last.finish_reason ?? null));
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
   * of the engine fails `ids.before` before any chunk, `ids.after` after one.
   */
  async readUntil(
    enough: () => boolean,
    ms: number,
    onTimeout: () => Error,
    ids: ErrorIds,
  ): Promise<void> {
    const deadline = performance.now() + ms;
    while (!this.done && !enough()) {
      let r: IteratorResult<LLMEngineOutput>;
      try {
        r = await within(this.#it.next(), Math.max(0, deadline - performance.now()), onTimeout);
      } catch (e) {
        if (e instanceof ConformanceFailure) throw e;
        throw failAt(this.chunks.length === 0 ? ids.before : ids.after, describe(e));
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

function open(s: State, ctx: RequestContext, id: AssertionId): Reader {
  const req = request(s.config!.model, s.opts.prompt, LONG_MAX_TOKENS);
  try {
    return new Reader(s.engine.generate(req, ctx));
  } catch (e) {
    throw failAt(id, describe(e));
  }
}

/**
 * Cancel after chunks were read, while the engine is generating: an engine that looks at the
 * signal only when a request starts, or only between requests, never ends this one; one that
 * ends it, but with `length` or `stop` instead of `cancelled` (Dynamo's documented reason for a
 * cancelled request), misreports it.
 */
export async function cancellationMidStream(
  s: State,
  finish: (last: LLMEngineOutput | undefined) => void = checkMidStreamFinish,
): Promise<void> {
  const ctx = new RequestContext();
  const reader = open(s, ctx, "cancellation_mid_stream/generate-sync");
  try {
    const step = s.opts.stepTimeoutMs;
    await reader.readUntil(
      () => reader.chunks.length >= READ_BEFORE_CANCEL || reader.terminal !== undefined,
      step,
      () =>
        failAt(
          "cancellation_mid_stream/first-chunks",
          `no ${READ_BEFORE_CANCEL} chunks in ${step} ms`,
        ),
      {
        before: "cancellation_mid_stream/no-error-before-chunk",
        after: "cancellation_mid_stream/no-error-after-chunk",
      },
    );
    const early = reader.terminal;
    if (early !== undefined || reader.done) {
      const why = JSON.stringify(early?.finish_reason ?? null);
      throw failAt(
        "cancellation_mid_stream/not-early",
        `the stream ended (finish_reason ${why}) after ${reader.chunks.length} chunks, before the ` +
          `cancel, although max_tokens was ${LONG_MAX_TOKENS}`,
      );
    }
    ctx.stop();
    const ms = s.opts.cancelDeadlineMs;
    await reader.readUntil(
      () => reader.terminal !== undefined,
      ms,
      () =>
        failAt("cancellation_mid_stream/ends", `no terminal chunk within ${ms} ms of the cancel`),
      {
        before: "cancellation_mid_stream/no-error-after-cancel",
        after: "cancellation_mid_stream/no-error-after-cancel",
      },
    );
    finish(reader.terminal);
  } finally {
    reader.close();
  }
}

/**
 * The mid-stream check's last assertion: the stream the kit cancelled ends `cancelled`. The
 * check takes it as a parameter so that the kit's self-test can run it loosened (a planted error).
 */
export function checkMidStreamFinish(last: LLMEngineOutput | undefined): void {
  if (last?.finish_reason !== "cancelled") {
    throw failAt(
      "cancellation_mid_stream/finish",
      `the stream ended with finish_reason ${JSON.stringify(last?.finish_reason ?? null)}`,
    );
  }
}

/**
 * A request whose signal fired before `generate()` was called: it must end `cancelled` before any
 * token. An engine that only listens for a future `abort` event never hears this one.
 */
export async function cancellationPreAborted(s: State): Promise<void> {
  const ctx = new RequestContext();
  ctx.stop();
  const reader = open(s, ctx, "cancellation_pre_aborted/generate-sync");
  try {
    const ms = s.opts.cancelDeadlineMs;
    await reader.readUntil(
      () => reader.tokens > 0 || reader.terminal !== undefined,
      ms,
      () => failAt("cancellation_pre_aborted/ends", `no terminal chunk within ${ms} ms`),
      {
        before: "cancellation_pre_aborted/no-error-before-chunk",
        after: "cancellation_pre_aborted/no-error-after-chunk",
      },
    );
    if (reader.tokens > 0) {
      throw failAt("cancellation_pre_aborted/no-tokens", `it yielded ${reader.tokens} token(s)`);
    }
    const last = reader.terminal;
    if (last === undefined) {
      throw failAt("cancellation_pre_aborted/terminal", "it ended without a terminal chunk");
    }
    if (last.finish_reason !== "cancelled") {
      throw failAt(
        "cancellation_pre_aborted/finish",
        `it ended with finish_reason ${JSON.stringify(last.finish_reason ?? null)}`,
      );
    }
  } finally {
    reader.close();
  }
}
