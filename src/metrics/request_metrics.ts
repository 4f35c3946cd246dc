/**
 * Request metrics a serving stack watches, named like Dynamo's HTTP frontend
 * (`dynamo_frontend_*`): requests by status and error type, in-flight requests, time to first
 * token, inter-token latency, request duration, and input / output sequence lengths.
 */
import type { Counter, Gauge, Histogram } from "../contract/metrics/registry.ts";
import { Registry } from "../contract/metrics/registry.ts";

const PREFIX = "dynamo_frontend_";

/** Latency buckets in seconds, from 1 ms to 8 minutes. */
export const LATENCY_BUCKETS = [
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
  120,
  240,
  480,
] as const;
/** Inter-token latency buckets in seconds, 1 ms to 10 s. */
export const ITL_BUCKETS = [
  0.001,
  0.0025,
  0.005,
  0.0075,
  0.01,
  0.015,
  0.02,
  0.03,
  0.04,
  0.05,
  0.075,
  0.1,
  0.15,
  0.2,
  0.3,
  0.5,
  1,
  2.5,
  5,
  10,
] as const;
/** Sequence length buckets in tokens, 1 to 128k. */
export const TOKEN_BUCKETS = [
  1,
  8,
  32,
  64,
  128,
  256,
  512,
  1024,
  2048,
  4096,
  8192,
  16384,
  32768,
  65536,
  131072,
] as const;

/** How a request ended, the `status` label of `dynamo_frontend_requests_total`. */
export type RequestStatus = "success" | "error" | "cancelled";

/** The `dynamo_frontend_*` request metrics of a serving frontend, every one labelled by `model`. */
export class RequestMetrics {
  /** The registry the metrics are registered on. */
  readonly registry: Registry;
  /** `dynamo_frontend_requests_total`, by `model`, `status` and `error_type`. */
  readonly requests: Counter;
  /** `dynamo_frontend_inflight_requests`. */
  readonly inflight: Gauge;
  /** `dynamo_frontend_time_to_first_token_seconds`. */
  readonly ttft: Histogram;
  /** `dynamo_frontend_inter_token_latency_seconds`. */
  readonly itl: Histogram;
  /** `dynamo_frontend_request_duration_seconds`. */
  readonly duration: Histogram;
  /** `dynamo_frontend_input_sequence_tokens` (prompt length). */
  readonly inputTokens: Histogram;
  /** `dynamo_frontend_output_sequence_tokens` (generated length). */
  readonly outputTokens: Histogram;

  /**
   * Registers the metrics on `registry` (a new one by default); throws `InvalidArgument` if they
   * are already registered there.
   */
  constructor(registry: Registry = new Registry()) {
    this.registry = registry;
    const model = ["model"];
    this.requests = registry.counter({
      name: `${PREFIX}requests_total`,
      help: "Requests finished, by status and error type.",
      labelNames: ["model", "status", "error_type"],
    });
    this.inflight = registry.gauge({
      name: `${PREFIX}inflight_requests`,
      help: "Requests currently being processed.",
      labelNames: model,
    });
    /** A histogram `dynamo_frontend_<name>` by `model`. */
    const histogram = (name: string, help: string, buckets: readonly number[]) =>
      registry.histogram({ name: `${PREFIX}${name}`, help, labelNames: model, buckets });
    this.ttft = histogram(
      "time_to_first_token_seconds",
      "Time from request arrival to its first token.",
      LATENCY_BUCKETS,
    );
    this.itl = histogram(
      "inter_token_latency_seconds",
      "Time between consecutive tokens of a request.",
      ITL_BUCKETS,
    );
    this.duration = histogram(
      "request_duration_seconds",
      "Time from request arrival to its last chunk.",
      LATENCY_BUCKETS,
    );
    this.inputTokens = histogram(
      "input_sequence_tokens",
      "Prompt length of each request in tokens.",
      TOKEN_BUCKETS,
    );
    this.outputTokens = histogram(
      "output_sequence_tokens",
      "Generated length of each request in tokens.",
      TOKEN_BUCKETS,
    );
  }

  /** Start tracking one request; call the returned tracker's methods as tokens arrive. */
  startRequest(
    model: string,
    inputTokens: number,
    now: () => number = () => performance.now(),
  ): RequestTracker {
    return new RequestTracker(this, model, inputTokens, now);
  }
}

/** Tracks one request's timing and token counts into {@linkcode RequestMetrics}. */
export class RequestTracker {
  readonly #start: number;
  #last: number | undefined;
  #tokens = 0;
  #done = false;

  /**
   * Counts the request in flight. Made by {@linkcode RequestMetrics.startRequest}.
   *
   * @param m The metrics to record into.
   * @param model The `model` label.
   * @param inputTokens The prompt's length in tokens.
   * @param now Clock in milliseconds.
   */
  constructor(
    private readonly m: RequestMetrics,
    private readonly model: string,
    private readonly inputTokens: number,
    private readonly now: () => number,
  ) {
    this.#start = now();
    m.inflight.inc(1, { model });
  }

  /** Record `count` tokens arriving now (the first call records time to first token). */
  tokens(count = 1): void {
    if (this.#done || count <= 0) return;
    const t = this.now();
    const labels = { model: this.model };
    if (this.#last === undefined) this.m.ttft.observe((t - this.#start) / 1000, labels);
    else this.m.itl.observe((t - this.#last) / 1000 / count, labels);
    this.#last = t;
    this.#tokens += count;
  }

  /** Finish once; later calls are ignored. */
  finish(status: RequestStatus, errorType = ""): void {
    if (this.#done) return;
    this.#done = true;
    const labels = { model: this.model };
    this.m.inflight.dec(1, labels);
    this.m.requests.inc(1, { model: this.model, status, error_type: errorType });
    this.m.duration.observe((this.now() - this.#start) / 1000, labels);
    this.m.inputTokens.observe(this.inputTokens, labels);
    this.m.outputTokens.observe(this.#tokens, labels);
  }
}
