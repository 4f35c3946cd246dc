/**
 * Every assertion the conformance kit makes, by id (`<check>/<name>`), with the failure kind it
 * reports and the rule in words. Each place in the kit that can fail an engine names one of these
 * ids (`failAt("single_generate/usage", ...)`), and the kit's self-test holds, for each id, an
 * engine that breaks exactly that rule (`broken_assertions.ts`).
 */
import { ConformanceFailure, type FailureKind } from "./failure.ts";

/** One assertion: the failure kind it reports and the rule it enforces. */
export interface Assertion {
  /** The failure kind a break of it reports. */
  kind: FailureKind;
  /** The rule, in words. */
  rule: string;
}

const a = (kind: FailureKind, rule: string): Assertion => ({ kind, rule });

/**
 * The id of one of {@linkcode ASSERTIONS}: `<check>/<rule>`. Written out (not `keyof typeof`), so
 * the published types are explicit; the table below must name exactly these.
 */
export type AssertionId =
  | "start/resolves"
  | "start/model"
  | "kv_event_sources/resolves"
  | "kv_event_sources/idempotent"
  | "setup_metrics/resolves"
  | "setup_metrics/idempotent"
  | "single_generate/ends"
  | "single_generate/no-error-before-chunk"
  | "single_generate/no-error-after-chunk"
  | "single_generate/chunks"
  | "single_generate/terminal"
  | "single_generate/terminal-last"
  | "single_generate/max-tokens"
  | "single_generate/usage"
  | "concurrent_generates/ends"
  | "concurrent_generates/no-error-before-chunk"
  | "concurrent_generates/no-error-after-chunk"
  | "concurrent_generates/chunks"
  | "concurrent_generates/terminal"
  | "concurrent_generates/terminal-last"
  | "cancellation/generate-sync"
  | "cancellation/ends"
  | "cancellation/no-error-before-chunk"
  | "cancellation/no-error-after-chunk"
  | "cancellation/chunks"
  | "cancellation/terminal-last"
  | "cancellation/finish"
  | "cancellation_mid_stream/generate-sync"
  | "cancellation_mid_stream/first-chunks"
  | "cancellation_mid_stream/no-error-before-chunk"
  | "cancellation_mid_stream/no-error-after-chunk"
  | "cancellation_mid_stream/not-early"
  | "cancellation_mid_stream/ends"
  | "cancellation_mid_stream/no-error-after-cancel"
  | "cancellation_mid_stream/finish"
  | "cancellation_pre_aborted/generate-sync"
  | "cancellation_pre_aborted/no-error-before-chunk"
  | "cancellation_pre_aborted/no-error-after-chunk"
  | "cancellation_pre_aborted/ends"
  | "cancellation_pre_aborted/no-tokens"
  | "cancellation_pre_aborted/terminal"
  | "cancellation_pre_aborted/finish"
  | "optional_members/aliases"
  | "optional_members/llm-object"
  | "optional_members/llm-counts"
  | "optional_members/llm-bootstrap-host"
  | "optional_members/llm-agrees"
  | "optional_members/endpoint-ready"
  | "optional_members/controls-resolve"
  | "optional_members/controls-distinct"
  | "optional_members/controls-runnable"
  | "optional_members/unknown-control-refused"
  | "optional_members/health-payload-resolves"
  | "optional_members/health-payload-valid"
  | "optional_members/health-payload-probe"
  | "optional_members/health-probe-served"
  | "optional_members/health-probe-ends"
  | "optional_members/quiescent-resolves"
  | "optional_members/quiescent-typed"
  | "optional_members/quiescent-watch-streams"
  | "optional_members/quiescent-busy"
  | "optional_members/quiescent-settles"
  | "optional_members/drain-resolves"
  | "optional_members/quiescent-after-drain"
  | "cleanup/resolves"
  | "second_cleanup/resolves"
  | "cleanup_without_start/resolves"
  | "kv_cache_overload/start"
  | "kv_cache_overload/ends"
  | "kv_cache_overload/no-error-before-chunk"
  | "kv_cache_overload/no-error-after-chunk"
  | "kv_cache_overload/chunks"
  | "kv_cache_overload/terminal"
  | "kv_cache_overload/terminal-last"
  | "kv_cache_overload/not-cancelled"
  | "kv_cache_overload/short-served";

/** The assertions, by id; the part before `/` is the check that makes it. */
export const ASSERTIONS: Readonly<Record<AssertionId, Assertion>> = {
  "start/resolves": a("StartFailed", "start() resolves within the step bound"),
  "start/model": a("EmptyModelInConfig", "start()'s EngineConfig names a model"),
  "kv_event_sources/resolves": a("KvEventSourcesFailed", "kvEventSources() resolves"),
  "kv_event_sources/idempotent": a("KvEventSourcesNotIdempotent", "the same ranks each call"),
  "setup_metrics/resolves": a("SetupMetricsFailed", "setupMetrics() resolves"),
  "setup_metrics/idempotent": a("ComponentMetricsNotIdempotent", "the same ranks each call"),
  "single_generate/ends": a("GenerateFailed", "the stream ends within the step bound"),
  "single_generate/no-error-before-chunk": a("GenerateFailed", "no throw before a chunk"),
  "single_generate/no-error-after-chunk": a("StreamYieldedError", "no throw after a chunk"),
  "single_generate/chunks": a("NoChunksYielded", "the stream yields chunks"),
  "single_generate/terminal": a("NoTerminalChunk", "a chunk carries finish_reason"),
  "single_generate/terminal-last": a("ChunkAfterTerminal", "one terminal chunk, the last"),
  "single_generate/max-tokens": a("MaxTokensExceeded", "no more tokens than max_tokens (8)"),
  "single_generate/usage": a("CompletionTokensMismatch", "completion_tokens = tokens streamed"),
  "concurrent_generates/ends": a("ConcurrentGenerateFailed", "all end within the step bound"),
  "concurrent_generates/no-error-before-chunk": a("ConcurrentGenerateFailed", "no throw"),
  "concurrent_generates/no-error-after-chunk": a("ConcurrentGenerateFailed", "no mid-stream throw"),
  "concurrent_generates/chunks": a("ConcurrentGenerateFailed", "each stream yields chunks"),
  "concurrent_generates/terminal": a("ConcurrentGenerateFailed", "each has a terminal chunk"),
  "concurrent_generates/terminal-last": a("ConcurrentGenerateFailed", "each: one terminal, last"),
  "cancellation/generate-sync": a("GenerateFailed", "generate() itself does not throw"),
  "cancellation/ends": a("CancellationNotObserved", "the stream ends within the cancel deadline"),
  "cancellation/no-error-before-chunk": a("GenerateFailed", "no throw before a chunk"),
  "cancellation/no-error-after-chunk": a("StreamYieldedError", "no throw after a chunk"),
  "cancellation/chunks": a("NoChunksYielded", "the cancelled stream yields a chunk"),
  "cancellation/terminal-last": a("ChunkAfterTerminal", "one terminal chunk, the last"),
  "cancellation/finish": a("CancellationIgnored", "it ends with finish_reason cancelled"),
  "cancellation_mid_stream/generate-sync": a("GenerateFailed", "generate() does not throw"),
  "cancellation_mid_stream/first-chunks": a("GenerateFailed", "two chunks within the step bound"),
  "cancellation_mid_stream/no-error-before-chunk": a("GenerateFailed", "no throw before a chunk"),
  "cancellation_mid_stream/no-error-after-chunk": a("StreamYieldedError", "no throw before cancel"),
  "cancellation_mid_stream/not-early": a(
    "MidStreamCancellationNotObserved",
    "a 10,000-token request does not end after two chunks",
  ),
  "cancellation_mid_stream/ends": a(
    "MidStreamCancellationNotObserved",
    "a terminal chunk within the cancel deadline",
  ),
  "cancellation_mid_stream/no-error-after-cancel": a("StreamYieldedError", "no throw on cancel"),
  "cancellation_mid_stream/finish": a(
    "MidStreamCancellationNotObserved",
    "it ends with finish_reason cancelled (Dynamo's documented reason), not length or stop",
  ),
  "cancellation_pre_aborted/generate-sync": a("GenerateFailed", "generate() does not throw"),
  "cancellation_pre_aborted/no-error-before-chunk": a("GenerateFailed", "no throw before a chunk"),
  "cancellation_pre_aborted/no-error-after-chunk": a("StreamYieldedError", "no throw after one"),
  "cancellation_pre_aborted/ends": a(
    "PreAbortedRequestNotCancelled",
    "a terminal chunk within the cancel deadline",
  ),
  "cancellation_pre_aborted/no-tokens": a("PreAbortedRequestNotCancelled", "no token at all"),
  "cancellation_pre_aborted/terminal": a("PreAbortedRequestNotCancelled", "a terminal chunk"),
  "cancellation_pre_aborted/finish": a("PreAbortedRequestNotCancelled", "finish_reason cancelled"),
  "optional_members/aliases": a("LlmRegistrationInvalid", "model_aliases: non-empty names"),
  "optional_members/llm-object": a("LlmRegistrationInvalid", "llm is an object"),
  "optional_members/llm-counts": a("LlmRegistrationInvalid", "llm's counts are counts"),
  "optional_members/llm-bootstrap-host": a("LlmRegistrationInvalid", "bootstrap_host: a string"),
  "optional_members/llm-agrees": a("LlmRegistrationInvalid", "llm agrees with the flat fields"),
  "optional_members/endpoint-ready": a("EndpointReadyFailed", "onEndpointReady() resolves"),
  "optional_members/controls-resolve": a("ControlsInvalid", "supportedControls() resolves"),
  "optional_members/controls-distinct": a("ControlsInvalid", "distinct non-empty names"),
  "optional_members/controls-runnable": a("ControlsInvalid", "advertised means engineControl()"),
  "optional_members/unknown-control-refused": a(
    "UnknownControlAccepted",
    "an unknown control is refused with InvalidArgument naming it",
  ),
  "optional_members/health-payload-resolves": a("HealthCheckPayloadInvalid", "it resolves"),
  "optional_members/health-payload-valid": a("HealthCheckPayloadInvalid", "a valid request"),
  "optional_members/health-payload-probe": a("HealthCheckPayloadInvalid", "marked is_probe"),
  "optional_members/health-probe-served": a("HealthCheckPayloadInvalid", "generate() serves it"),
  "optional_members/health-probe-ends": a("HealthCheckPayloadInvalid", "a non-error terminal"),
  "optional_members/quiescent-resolves": a("QuiescenceInconsistent", "isQuiescent() resolves"),
  "optional_members/quiescent-typed": a("QuiescenceInconsistent", "a boolean or null"),
  "optional_members/quiescent-watch-streams": a(
    "QuiescenceInconsistent",
    "the request it watches yields a first chunk within the step bound, without throwing",
  ),
  "optional_members/quiescent-busy": a("QuiescenceInconsistent", "never true while streaming"),
  "optional_members/quiescent-settles": a("QuiescenceInconsistent", "not false once idle"),
  "optional_members/drain-resolves": a("QuiescenceInconsistent", "drain() resolves"),
  "optional_members/quiescent-after-drain": a("QuiescenceInconsistent", "not false after drain"),
  "cleanup/resolves": a("CleanupFailed", "cleanup() resolves"),
  "second_cleanup/resolves": a("SecondCleanupFailed", "a second cleanup() resolves"),
  "cleanup_without_start/resolves": a("CleanupWithoutStartFailed", "cleanup() before start()"),
  "kv_cache_overload/start": a("StartFailed", "a fresh engine's start() resolves"),
  "kv_cache_overload/ends": a("OverloadStalled", "every stream ends within the step bound"),
  "kv_cache_overload/no-error-before-chunk": a(
    "GenerateFailed",
    "no throw before a chunk, except a typed refusal of a request that may be refused",
  ),
  "kv_cache_overload/no-error-after-chunk": a("StreamYieldedError", "no throw after a chunk"),
  "kv_cache_overload/chunks": a("NoChunksYielded", "each stream yields chunks"),
  "kv_cache_overload/terminal": a("NoTerminalChunk", "each has a terminal chunk"),
  "kv_cache_overload/terminal-last": a("ChunkAfterTerminal", "each: one terminal, the last"),
  "kv_cache_overload/not-cancelled": a("OverloadUnserved", "no stream ends cancelled uncancelled"),
  "kv_cache_overload/short-served": a("OverloadUnserved", "the short request ends without error"),
};

/** The check that makes assertion `id`. */
export function checkOf(id: AssertionId): string {
  return id.slice(0, id.indexOf("/"));
}

/** The failure of assertion `id`: its kind, `detail` (what the engine did), and the id. */
export function failAt(id: AssertionId, detail = ""): ConformanceFailure {
  return new ConformanceFailure(ASSERTIONS[id].kind, detail, id);
}
