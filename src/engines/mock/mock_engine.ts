/**
 * A CPU engine like Dynamo's mocker: deterministic tokens from the prompt, an optional delay
 * per token, every stop condition, cancellation, usage, fake KV blocks and metrics. It is the
 * reference an engine author can read, and what `npm start` ran before the WebGPU engine.
 *
 * Its fake cache follows the WebGPU engine's rules (`kv_capacity.ts`): a prompt the whole cache
 * could never hold is refused (`InvalidArgument`, naming the numbers), output ends with `length`
 * when prompt and output fill the cache, and requests beyond the cache wait their turn.
 */
import { EngineError } from "../../contract/errors.ts";
import type {
  GenerateContext,
  LLMEngine,
  MetricsBindings,
  MetricsContext,
} from "../../contract/engine.ts";
import { probeRequest, runControl, withLlm } from "../../contract/engine_hooks.ts";
import type { KvEventSource } from "../../contract/kv_events.ts";
import * as out from "../../contract/output.ts";
import type { EngineConfig, LLMEngineOutput, PreprocessedRequest } from "../../contract/types.ts";
import { validateRequest } from "../../contract/validate.ts";
import { kvMisfit, sequenceLimit } from "../../contract/kv_capacity.ts";
import { Lifecycle } from "../lifecycle.ts";
import { FakeKvCache } from "./fake_kv.ts";
import { mockToken, promptSeed } from "./tokens.ts";

/** Settings of a {@linkcode MockEngine}; every field has a default. */
export interface MockEngineOptions {
  /** The model name reported by `start()` (default `kiln-mock`). */
  model?: string;
  /** Token ids are drawn from `[0, vocabSize)` (default 32000). */
  vocabSize?: number;
  /** Milliseconds to wait before each token (0: yield to the event loop only). */
  delayMs?: number;
  /** `max_tokens` when a request gives none. */
  defaultMaxTokens?: number;
  /** Reported as `context_length` (default 4096). */
  contextLength?: number;
  /** Tokens per fake KV block (default 16). */
  blockSize?: number;
  /** Blocks of the fake KV cache (default 1024). */
  totalBlocks?: number;
}

interface InFlight {
  controller: AbortController;
  done: Promise<void>;
}

/** Wait `ms` (or one macrotask when 0), returning early when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Check `request` as the mock admits it (valid, unguided, within the context, the vocabulary and
 * the fake cache: `InvalidArgument` naming the field otherwise); its `max_tokens`, capped where
 * prompt and output would fill the context or the cache.
 */
function admit(request: PreprocessedRequest, o: Required<MockEngineOptions>): number {
  validateRequest(request);
  if (request.sampling_options.guided_decoding !== undefined) {
    // Its tokens are a function of the prompt, not a model's choice: it cannot be constrained,
    // and answering as if it were would be the silent ignoring the contract forbids.
    throw EngineError.invalidArgument(
      "request.sampling_options.guided_decoding: the mock engine draws its tokens from the " +
        "prompt and cannot constrain them",
    );
  }
  const prompt = request.token_ids;
  if (prompt.length > o.contextLength) {
    throw EngineError.invalidArgument(
      `request.token_ids: ${prompt.length} tokens exceed the context length ${o.contextLength}`,
    );
  }
  const bad = prompt.findIndex((t) => t >= o.vocabSize);
  if (bad >= 0) {
    throw EngineError.invalidArgument(
      `request.token_ids[${bad}]: ${prompt[bad]} >= vocab size ${o.vocabSize}`,
    );
  }
  const kv = { numBlocks: o.totalBlocks, blockSize: o.blockSize };
  const misfit = kvMisfit(request, kv);
  if (misfit) {
    const field = misfit.field === "token_ids" ? "token_ids" : "stop_conditions.min_tokens";
    throw EngineError.invalidArgument(`request.${field}: ${misfit.message}`);
  }
  const stop = request.stop_conditions;
  return Math.min(
    stop.max_tokens ?? o.defaultMaxTokens,
    sequenceLimit(o.contextLength, kv) - prompt.length,
  );
}

/**
 * A CPU {@linkcode LLMEngine} with deterministic output: the tokens depend only on the prompt, so
 * two runs of a request agree.
 */
export class MockEngine implements LLMEngine {
  /** The options with their defaults filled in. */
  readonly options: Required<MockEngineOptions>;
  readonly #life = new Lifecycle();
  #inflight = new Map<GenerateContext, InFlight>();
  #kv: FakeKvCache;

  /** An engine in the `new` state; nothing is allocated until `start()`. */
  constructor(options: MockEngineOptions = {}) {
    this.options = {
      model: options.model ?? "kiln-mock",
      vocabSize: options.vocabSize ?? 32000,
      delayMs: options.delayMs ?? 0,
      defaultMaxTokens: options.defaultMaxTokens ?? 16,
      contextLength: options.contextLength ?? 4096,
      blockSize: options.blockSize ?? 16,
      totalBlocks: options.totalBlocks ?? 1024,
    };
    this.#kv = new FakeKvCache(this.options.blockSize, this.options.totalBlocks);
  }

  /** Blocks the fake KV cache holds now (0 when no request is running). */
  get usedBlocks(): number {
    return this.#kv.usedBlocks;
  }

  start(_workerId: bigint): Promise<EngineConfig> {
    try {
      this.#life.begin(true); // nothing to load: running at once
    } catch (e) {
      return Promise.reject(e);
    }
    const o = this.options;
    return Promise.resolve(withLlm({
      model: o.model,
      context_length: o.contextLength,
      kv_cache_block_size: o.blockSize,
      total_kv_blocks: o.totalBlocks,
      max_num_seqs: 256,
      max_num_batched_tokens: o.contextLength,
      runtime_data: { engine: "mock" },
    }));
  }

  async *generate(
    request: PreprocessedRequest,
    ctx: GenerateContext,
  ): AsyncGenerator<LLMEngineOutput> {
    this.#life.require("generate()");
    const maxTokens = admit(request, this.options);
    const prompt = request.token_ids;
    const o = this.options;
    const stop = request.stop_conditions;
    if (this.#inflight.has(ctx)) {
      throw EngineError.invalidArgument(
        "this GenerateContext is already streaming a request: make one context per request",
      );
    }
    const controller = new AbortController();
    const signal = AbortSignal.any([controller.signal, ctx.signal]);
    let finished!: () => void;
    const entry: InFlight = { controller, done: new Promise((r) => (finished = r)) };
    this.#inflight.set(ctx, entry);
    let blocks: ReturnType<FakeKvCache["acquire"]> | undefined;
    let unreserve: (() => void) | undefined;
    const minTokens = stop.min_tokens ?? 0;
    const shown = new Set(stop.stop_token_ids ?? []);
    const hidden = new Set(stop.stop_token_ids_hidden ?? []);
    const eos = new Set(stop.ignore_eos ? [] : request.eos_token_ids);
    const seed = promptSeed(prompt);
    let n = 0;
    const end = (chunk: LLMEngineOutput) => out.withUsage(chunk, out.usage(prompt.length, n));
    try {
      unreserve = await this.#kv.reserve(
        Math.ceil((prompt.length + maxTokens) / o.blockSize),
        signal,
      );
      if (unreserve === undefined) {
        yield end(out.cancelled());
        return;
      }
      blocks = this.#kv.acquire(prompt);
      for (let step = 0;; step++) {
        if (signal.aborted) {
          yield end(out.cancelled()); // before any token when the signal came aborted
          return;
        }
        if (n >= maxTokens) {
          yield end(out.length());
          return;
        }
        await pause(o.delayMs, signal);
        if (signal.aborted) continue;
        const id = mockToken(seed, step, o.vocabSize);
        const mayStop = n >= minTokens;
        if (mayStop && hidden.has(id)) {
          yield { ...end(out.stop()), stop_reason: id };
          return;
        }
        if (mayStop && eos.has(id)) {
          yield end(out.eos());
          return;
        }
        if (n === 0) ctx.notifyFirstToken();
        n++;
        blocks.update(n);
        if (mayStop && shown.has(id)) {
          yield { ...end(out.withTokens(out.stop(), [id])), stop_reason: id };
          return;
        }
        if (n >= maxTokens) {
          yield end(out.withTokens(out.length(), [id]));
          return;
        }
        yield out.token(id);
      }
    } finally {
      blocks?.release();
      unreserve?.();
      this.#inflight.delete(ctx);
      finished();
    }
  }

  abort(ctx: GenerateContext): Promise<void> {
    this.#inflight.get(ctx)?.controller.abort();
    return Promise.resolve();
  }

  /** Refuse new requests and wait for every live one to end (no timeout: a mock's end). */
  drain(): Promise<void> {
    return this.#life.drain(() => Promise.all([...this.#inflight.values()].map((r) => r.done)));
  }

  /** Cancel every live request and empty the fake cache. Idempotent. */
  cleanup(): Promise<void> {
    return this.#life.cleanup(() => {
      for (const r of this.#inflight.values()) r.controller.abort();
      this.#kv.clear();
    });
  }

  /** True when no request is live (waiting for room or generating). */
  isQuiescent(): Promise<boolean | null> {
    return Promise.resolve(this.#inflight.size === 0);
  }

  /** A one-token probe of token 0 once running; null before `start()` and once stopping. */
  healthCheckPayload(): Promise<PreprocessedRequest | null> {
    return Promise.resolve(
      this.#life.state === "running" ? probeRequest(this.options.model, 0) : null,
    );
  }

  /** None: the mock has no control to offer. */
  supportedControls(): Promise<string[]> {
    return Promise.resolve([]);
  }

  /** Refuses every control (`InvalidArgument`, naming it). */
  engineControl(control: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    return runControl({}, control, body);
  }

  kvEventSources(): Promise<KvEventSource[]> {
    return Promise.resolve([{
      kind: "push",
      dp_rank: 0,
      onReady: (publisher) => (this.#kv.publisher = publisher),
    }]);
  }

  setupMetrics(ctx: MetricsContext): Promise<MetricsBindings> {
    this.#kv.gauges = ctx.metrics.componentGauges(0);
    this.#kv.report();
    return Promise.resolve({ dp_ranks: [0] });
  }
}
