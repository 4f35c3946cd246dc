/**
 * The mock engine with one member or one kind of request replaced: the base of the kit's
 * self-test engines (`broken_assertions.ts`), each breaking one assertion of one check and
 * nothing else. A request is recognised by the phase of the kit that sends it (see
 * {@linkcode Phase}), so a broken engine misbehaves only where the check it targets looks.
 */
import type {
  GenerateContext,
  LLMEngine,
  MetricsBindings,
  MetricsContext,
  ServingEndpoint,
} from "../contract/engine.ts";
import { EngineError } from "../contract/errors.ts";
import type { KvEventSource } from "../contract/kv_events.ts";
import * as out from "../contract/output.ts";
import type { EngineConfig, LLMEngineOutput, PreprocessedRequest } from "../contract/types.ts";
import { MockEngine, type MockEngineOptions } from "../engines/mock/mock_engine.ts";
import { LONG_MAX_TOKENS } from "./support.ts";

/** A stream of chunks. */
export type Gen = AsyncIterable<LLMEngineOutput>;

/**
 * Which check sent a request: `single` (single_generate), `concurrent`, `cancel` (cancelled
 * before its first pull), `mid` (cancelled mid-stream), `pre` (pre-aborted), `probe` (the health
 * check's payload), `watch` (the request optional_members watches isQuiescent() with), and
 * `overload` (kv_cache_overload's requests).
 */
export type Phase =
  | "single"
  | "concurrent"
  | "cancel"
  | "mid"
  | "pre"
  | "probe"
  | "watch"
  | "overload";

/** How a request is served: `inner()` is the mock's own stream. */
export type Serve = (inner: () => Gen, request: PreprocessedRequest, ctx: GenerateContext) => Gen;

/** The error a broken engine throws. */
export const broke = (what: string): EngineError =>
  new EngineError("Unknown", `deliberately broken: ${what}`);

/** A mock engine whose members delegate to a {@linkcode MockEngine} until a test replaces them. */
export class Sabotaged implements LLMEngine {
  readonly inner: MockEngine;
  /** Aborts on cleanup(): streams that hang wait for it. */
  readonly stopped = new AbortController();
  /** Replacements of the stream, per phase. */
  readonly serve = new Map<Phase, Serve>();
  started = false;
  cleanups = 0;
  #eights = 0;
  #longs = 0;

  /** The `instance`-th engine the factory made (0: the kit's main engine). */
  constructor(readonly instance: number, options: MockEngineOptions = {}) {
    this.inner = new MockEngine({ model: "sabotaged", ...options });
  }

  /** The phase of the kit that sent `request` (see {@linkcode Phase}). */
  phase(request: PreprocessedRequest, ctx: GenerateContext): Phase {
    if (request.is_probe) return "probe";
    if (request.stop_conditions.ignore_eos) return "overload";
    if (ctx.signal.aborted) return "pre";
    if (request.stop_conditions.max_tokens === LONG_MAX_TOKENS) {
      return (["cancel", "mid"] as const)[this.#longs++] ?? "watch";
    }
    return this.#eights++ === 0 ? "single" : "concurrent";
  }

  generate(request: PreprocessedRequest, ctx: GenerateContext): Gen {
    const inner = () => this.inner.generate(request, ctx);
    const serve = this.serve.get(this.phase(request, ctx));
    return serve ? serve(inner, request, ctx) : inner();
  }

  async start(workerId: bigint): Promise<EngineConfig> {
    const config = await this.inner.start(workerId);
    this.started = true;
    return config;
  }

  cleanup(): Promise<void> {
    this.cleanups++;
    this.stopped.abort();
    return this.inner.cleanup();
  }

  abort(ctx: GenerateContext): Promise<void> {
    return this.inner.abort(ctx);
  }

  kvEventSources(): Promise<KvEventSource[]> {
    return this.inner.kvEventSources();
  }

  setupMetrics(ctx: MetricsContext): Promise<MetricsBindings> {
    return this.inner.setupMetrics(ctx);
  }

  drain?(): Promise<void> {
    return this.inner.drain();
  }

  isQuiescent?(): Promise<boolean | null> {
    return this.inner.isQuiescent();
  }

  healthCheckPayload?(): Promise<PreprocessedRequest | null> {
    return this.inner.healthCheckPayload();
  }

  supportedControls?(): Promise<string[]> {
    return this.inner.supportedControls();
  }

  engineControl?(control: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.inner.engineControl(control, body);
  }

  onEndpointReady?(_endpoint: ServingEndpoint): Promise<void> {
    return Promise.resolve();
  }

  /** Resolves when `signal` or this engine's cleanup() aborts. */
  until(signal?: AbortSignal): Promise<void> {
    const gone = signal ? AbortSignal.any([signal, this.stopped.signal]) : this.stopped.signal;
    return new Promise((r) => {
      if (gone.aborted) r();
      else gone.addEventListener("abort", () => r(), { once: true });
    });
  }
}

/** What follows a stream's own tokens: chunks, or a wait (that may throw) and then chunks. */
export type Rest = Iterable<LLMEngineOutput> | Gen | Promise<Iterable<LLMEngineOutput>>;

/** A stream of `tokens` tokens of its own (the mock not involved), then `then()`'s chunks. */
export async function* ownTokens(tokens: number, then: () => Rest): Gen {
  for (let i = 0; i < tokens; i++) yield out.token(i + 1);
  yield* await then();
}

/** Every chunk of `stream`, each changed by `edit`. */
export async function* mapChunks(
  stream: Gen,
  edit: (c: LLMEngineOutput) => LLMEngineOutput | undefined,
): Gen {
  for await (const c of stream) {
    const d = edit(c);
    if (d) yield d;
  }
}

/** `stream`, then `extra` after its terminal chunk. */
export async function* append(stream: Gen, extra: LLMEngineOutput): Gen {
  yield* stream;
  yield extra;
}

/** A terminal `reason` chunk; with usage of the prompt and `n` tokens. */
export function ending(reason: "length" | "cancelled", prompt: number, n = 0): LLMEngineOutput {
  return out.withUsage(reason === "length" ? out.length() : out.cancelled(), out.usage(prompt, n));
}
