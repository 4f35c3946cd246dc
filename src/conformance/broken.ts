/**
 * Deliberately broken engines, one per failure kind: each wraps the mock engine and breaks
 * exactly one rule, to prove that every check of the kit can fail.
 */
import { EngineError } from "../contract/errors.ts";
import {
  type GenerateContext,
  type LLMEngine,
  type MetricsBindings,
  type MetricsContext,
  RequestContext,
} from "../contract/engine.ts";
import { probeRequest } from "../contract/engine_hooks.ts";
import type { KvEventSource } from "../contract/kv_events.ts";
import * as out from "../contract/output.ts";
import type { EngineConfig, LLMEngineOutput, PreprocessedRequest } from "../contract/types.ts";
import { MockEngine } from "../engines/mock/mock_engine.ts";
import type { FailureKind } from "./failure.ts";

type Gen = AsyncIterable<LLMEngineOutput>;

const fail = (what: string) => new EngineError("Unknown", `deliberately broken: ${what}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Tokens one every `pauseMs` up to the request's `max_tokens` (16 if none), deaf to its signal. */
async function* slowTokens(request: PreprocessedRequest, pauseMs: number): Gen {
  const max = request.stop_conditions.max_tokens ?? 16;
  for (let i = 0; i < max; i++) {
    await sleep(pauseMs);
    yield out.token(i % 7);
  }
  yield out.withUsage(out.length(), out.usage(request.token_ids.length, max));
}

/** A mock engine with one behaviour replaced. */
class BrokenEngine implements LLMEngine {
  readonly inner = new MockEngine({ model: "broken" });
  started = false;
  cleanups = 0;
  calls = 0;
  active = 0;
  /** Tokens (prompt and most output) of the streams running now (`OverloadStalled`). */
  inUse = 0;
  /** Streams parked for room (`OverloadStalled`): the ones after them queue behind them. */
  parked = 0;
  /** Aborted by cleanup: wakes streams parked for ever. */
  readonly #stopped = new AbortController();

  // Dynamo 1.5's members: present only on the engines that break one of them.
  declare isQuiescent?: NonNullable<LLMEngine["isQuiescent"]>;
  declare healthCheckPayload?: NonNullable<LLMEngine["healthCheckPayload"]>;
  declare supportedControls?: NonNullable<LLMEngine["supportedControls"]>;
  declare engineControl?: NonNullable<LLMEngine["engineControl"]>;
  declare onEndpointReady?: NonNullable<LLMEngine["onEndpointReady"]>;

  constructor(readonly kind: FailureKind) {
    Object.assign(this, brokenMember(kind, this.inner));
  }

  async start(workerId: bigint): Promise<EngineConfig> {
    if (this.kind === "StartFailed") throw fail("start");
    const config = await this.inner.start(workerId);
    this.started = true;
    if (this.kind === "LlmRegistrationInvalid") {
      // The nested registration disagrees with the flat field it repeats.
      return { ...config, llm: { ...config.llm, total_kv_blocks: config.total_kv_blocks! + 1 } };
    }
    return this.kind === "EmptyModelInConfig" ? { ...config, model: "" } : config;
  }

  generate(request: PreprocessedRequest, ctx: GenerateContext): Gen {
    if (this.kind === "PreAbortedRequestNotCancelled") {
      return this.#hearsOnlyAbortEvents(request, ctx);
    }
    return this.#generate(request, ctx);
  }

  /**
   * Cancels its request only on a future `abort` event, heard from the moment generate() is
   * called: a signal that is already aborted never fires, so the request runs to its end.
   */
  #hearsOnlyAbortEvents(request: PreprocessedRequest, ctx: GenerateContext): Gen {
    const own = new RequestContext({ requestId: ctx.requestId });
    ctx.signal.addEventListener("abort", () => own.stop(), { once: true });
    return this.inner.generate(request, own);
  }

  async *#generate(
    request: PreprocessedRequest,
    ctx: GenerateContext,
  ): AsyncGenerator<LLMEngineOutput> {
    const stream = () => this.inner.generate(request, ctx);
    switch (this.kind) {
      case "GenerateFailed":
        throw fail("generate");
      case "NoChunksYielded":
        return;
      case "ChunkAfterTerminal":
        yield* stream();
        yield out.token(1);
        return;
      case "NoTerminalChunk":
        for await (const c of stream()) if (c.finish_reason === undefined) yield c;
        return;
      case "StreamYieldedError":
        yield out.token(1);
        throw fail("mid-stream");
      case "ConcurrentGenerateFailed":
        yield* this.#oneAtATime(stream);
        return;
      case "CancellationNotObserved": {
        // Ignores the signal: produces slow tokens until the kit gives up (lazy, so it stops then).
        yield* slowTokens(request, 50);
        return;
      }
      case "MidStreamCancellationNotObserved": {
        // Looks at the signal once, when the request starts; then ignores it.
        if (ctx.signal.aborted) {
          yield out.withUsage(out.cancelled(), out.usage(request.token_ids.length, 0));
          return;
        }
        yield* slowTokens(request, 10);
        return;
      }
      case "CancellationIgnored":
        for await (const c of stream()) {
          yield c.finish_reason === "cancelled" ? { ...c, finish_reason: "length" } : c;
        }
        return;
      case "OverloadStalled":
        yield* this.#stallsWhenFull(request, ctx, stream);
        return;
      case "OverloadUnserved":
        // Gives up on the overload check's requests (ignore_eos, not a probe) as if cancelled.
        if (request.stop_conditions.ignore_eos && !request.is_probe) {
          yield out.withUsage(out.cancelled(), out.usage(request.token_ids.length, 0));
          return;
        }
        yield* stream();
        return;
      case "CheckCrashed": // a chunk that is not an object
        yield null as unknown as LLMEngineOutput;
        return;
      case "MaxTokensExceeded": {
        // One token past max_tokens (and counted in the usage, so only the bound is broken).
        const stop = request.stop_conditions;
        const over = { ...stop, max_tokens: (stop.max_tokens ?? 16) + 1 };
        yield* this.inner.generate({ ...request, stop_conditions: over }, ctx);
        return;
      }
      case "CompletionTokensMismatch":
        for await (const c of stream()) {
          const u = c.completion_usage;
          yield u ? out.withUsage(c, out.usage(u.prompt_tokens, u.completion_tokens + 1)) : c;
        }
        return;
      default:
        yield* stream();
    }
  }

  /** Fails a second stream while one runs (`ConcurrentGenerateFailed`). */
  async *#oneAtATime(stream: () => Gen): AsyncGenerator<LLMEngineOutput> {
    if (this.active > 0) throw fail("a second stream while one is running");
    this.active++;
    try {
      await sleep(5);
      yield* stream();
    } finally {
      this.active--;
    }
  }

  /**
   * The stall `OverloadStalled` is named after: a request that finds the cache too full waits
   * for room that never comes (and so does everything after it), until cancelled.
   */
  async *#stallsWhenFull(
    request: PreprocessedRequest,
    ctx: GenerateContext,
    stream: () => Gen,
  ): AsyncGenerator<LLMEngineOutput> {
    const o = this.inner.options;
    const need = request.token_ids.length + (request.stop_conditions.max_tokens ?? 16);
    if (this.parked > 0 || this.inUse + need > o.totalBlocks * o.blockSize) {
      const gone = AbortSignal.any([ctx.signal, this.#stopped.signal]);
      this.parked++;
      if (!gone.aborted) {
        await new Promise((r) => gone.addEventListener("abort", r, { once: true }));
      }
      this.parked--;
      yield out.withUsage(out.cancelled(), out.usage(request.token_ids.length, 0));
      return;
    }
    this.inUse += need;
    try {
      yield* stream();
    } finally {
      this.inUse -= need;
    }
  }

  async cleanup(): Promise<void> {
    this.cleanups++;
    this.#stopped.abort();
    if (this.kind === "CleanupFailed") throw fail("cleanup");
    if (this.kind === "SecondCleanupFailed" && this.cleanups > 1) throw fail("second cleanup");
    if (this.kind === "CleanupWithoutStartFailed" && !this.started) {
      throw fail("cleanup before start");
    }
    await this.inner.cleanup();
  }

  async kvEventSources(): Promise<KvEventSource[]> {
    if (this.kind === "KvEventSourcesFailed") throw fail("kvEventSources");
    const sources = await this.inner.kvEventSources();
    this.calls++;
    return this.kind === "KvEventSourcesNotIdempotent"
      ? sources.map((s) => ({ ...s, dp_rank: s.dp_rank + this.calls }))
      : sources;
  }

  async setupMetrics(ctx: MetricsContext): Promise<MetricsBindings> {
    if (this.kind === "SetupMetricsFailed") throw fail("setupMetrics");
    const bindings = await this.inner.setupMetrics(ctx);
    this.calls++;
    return this.kind === "ComponentMetricsNotIdempotent"
      ? { dp_ranks: [...bindings.dp_ranks, this.calls] }
      : bindings;
  }
}

/** The Dynamo 1.5 member that breaks the rule `kind` checks (none for other kinds). */
function brokenMember(kind: FailureKind, inner: MockEngine): Partial<LLMEngine> {
  switch (kind) {
    case "EndpointReadyFailed":
      return { onEndpointReady: () => Promise.reject(fail("onEndpointReady")) };
    case "ControlsInvalid": // advertises a control it cannot run
      return { supportedControls: () => Promise.resolve(["clear_kv_blocks"]) };
    case "UnknownControlAccepted": // answers any name as if it ran it
      return { engineControl: () => Promise.resolve({ status: "success" }) };
    case "HealthCheckPayloadInvalid": // a probe of a token past the vocabulary
      return {
        healthCheckPayload: () =>
          Promise.resolve(probeRequest(inner.options.model, inner.options.vocabSize)),
      };
    case "QuiescenceInconsistent": // claims to be idle whatever runs
      return { isQuiescent: () => Promise.resolve(true) };
    default:
      return {};
  }
}

/** An engine factory that breaks exactly the rule `kind` checks. */
export function brokenEngine(kind: FailureKind): () => LLMEngine {
  return () => new BrokenEngine(kind);
}
