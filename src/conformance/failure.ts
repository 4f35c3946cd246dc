/** The ways an engine can break the contract, as the conformance kit names them. */

/** Every way the kit can fail an engine, by name. */
export const FAILURE_KINDS = [
  "StartFailed",
  "EmptyModelInConfig",
  "GenerateFailed",
  "NoChunksYielded",
  "ChunkAfterTerminal",
  "NoTerminalChunk",
  "StreamYieldedError",
  "ConcurrentGenerateFailed",
  "CancellationNotObserved",
  "CancellationIgnored",
  "MidStreamCancellationNotObserved",
  "PreAbortedRequestNotCancelled",
  "CleanupFailed",
  "SecondCleanupFailed",
  "CleanupWithoutStartFailed",
  "KvEventSourcesFailed",
  "KvEventSourcesNotIdempotent",
  "SetupMetricsFailed",
  "ComponentMetricsNotIdempotent",
  "CompletionTokensMismatch",
  "MaxTokensExceeded",
  "OverloadStalled",
  "OverloadUnserved",
  "LlmRegistrationInvalid",
  "EndpointReadyFailed",
  "ControlsInvalid",
  "UnknownControlAccepted",
  "HealthCheckPayloadInvalid",
  "QuiescenceInconsistent",
  "CheckCrashed",
] as const;

/** One of {@linkcode FAILURE_KINDS}. */
export type FailureKind = typeof FAILURE_KINDS[number];

/** Whether `value` is one of {@linkcode FAILURE_KINDS}. */
export function isFailureKind(value: string): value is FailureKind {
  return (FAILURE_KINDS as readonly string[]).includes(value);
}

/** What each kind means, in words an engine author can act on. */
const EXPLAIN: Record<FailureKind, (detail: string) => string> = {
  StartFailed: (d) => `start() failed: ${d}`,
  EmptyModelInConfig: () => "start() returned an EngineConfig whose model is empty",
  GenerateFailed: (d) => `generate() failed before yielding anything: ${d}`,
  NoChunksYielded: (d) =>
    `the generate() stream ended without yielding a single chunk${d ? ` (${d})` : ""}`,
  ChunkAfterTerminal: (d) =>
    "a chunk was yielded after a terminal chunk (one with finish_reason); the terminal chunk " +
    `must be last${d ? ` (${d})` : ""}`,
  NoTerminalChunk: (d) =>
    `the stream ended without a terminal chunk (none carried finish_reason)${d ? `: ${d}` : ""}`,
  StreamYieldedError: (d) => `the stream threw after yielding chunks: ${d}`,
  ConcurrentGenerateFailed: (d) => `concurrent generate() calls failed (shared state?): ${d}`,
  CancellationNotObserved: (d) =>
    `the stream did not end within ${d} after its request was cancelled`,
  CancellationIgnored: (d) =>
    `the cancelled stream ended, but its terminal finish_reason was ${d}, not "cancelled" ` +
    "(an engine must report cancelled when it observes cancellation)",
  MidStreamCancellationNotObserved: (d) =>
    `a request cancelled after some of its chunks were read did not end with a terminal ` +
    `"cancelled" chunk: ${d} (an engine must watch the signal while it generates, not only when ` +
    "a request starts)",
  PreAbortedRequestNotCancelled: (d) =>
    `a request whose signal was already aborted when generate() was called was not cancelled ` +
    `before any token: ${d} (read signal.aborted, not only future "abort" events)`,
  CleanupFailed: (d) => `cleanup() failed: ${d}`,
  SecondCleanupFailed: (d) => `a second cleanup() failed; cleanup must be idempotent: ${d}`,
  CleanupWithoutStartFailed: (d) =>
    `cleanup() failed on an engine that was never started: ${d} (the worker calls cleanup() ` +
    "after a failed start(), so every resource must be released only if it was allocated)",
  KvEventSourcesFailed: (d) => `kvEventSources() failed: ${d}`,
  KvEventSourcesNotIdempotent: (d) =>
    `kvEventSources() returned a different dp_rank set on a second call (${d}); ` +
    "the sources must stay the same for the engine's lifetime",
  SetupMetricsFailed: (d) => `setupMetrics() failed: ${d}`,
  ComponentMetricsNotIdempotent: (d) =>
    `setupMetrics() returned different dp_ranks across calls (${d}); ` +
    "the rank set must stay the same for the engine's lifetime",
  CompletionTokensMismatch: (d) =>
    `the terminal completion_usage.completion_tokens disagrees with the tokens streamed (${d}); ` +
    "the engine's bookkeeping diverges from its output",
  MaxTokensExceeded: (d) =>
    `the stream yielded more tokens than the request's stop_conditions.max_tokens (${d})`,
  OverloadStalled: (d) =>
    `given more work than its KV cache holds, the engine did not end every stream: ${d}; ` +
    "a request that outgrows the cache must end (finish_reason length) or be refused, and " +
    "requests that fit must be served in turn, never left waiting for room that cannot come",
  OverloadUnserved: (d) =>
    `given more work than its KV cache holds, the engine ended a request it should have served: ` +
    `${d} (nothing cancelled it, so it must not end cancelled, and the short request that fits ` +
    "beside the others must end without an error)",
  LlmRegistrationInvalid: (d) =>
    `the EngineConfig's Dynamo 1.5 registration is wrong: ${d} (llm's fields are counts, and ` +
    "each one the flat fields also carry must equal theirs)",
  EndpointReadyFailed: (d) => `onEndpointReady() failed: ${d} (Dynamo stops the worker then)`,
  ControlsInvalid: (d) =>
    `the engine's controls are not usable: ${d} (supportedControls() names distinct controls ` +
    "that engineControl() runs)",
  UnknownControlAccepted: (d) =>
    `engineControl() with a name it does not offer was not refused with InvalidArgument naming ` +
    `it: ${d}`,
  HealthCheckPayloadInvalid: (d) =>
    `the health-check payload cannot probe the engine: ${d} (it must be null, or a valid ` +
    "request marked is_probe that the engine serves to a terminal chunk)",
  QuiescenceInconsistent: (d) =>
    `isQuiescent() disagrees with the requests in flight: ${d} (true only when no request is ` +
    "live, and not false once drain() resolved)",
  CheckCrashed: (d) =>
    `the check could not run to its end: ${d} (the engine gave the kit something none of its ` +
    "assertions expects, e.g. a chunk that is not an object)",
};

/** The kit's verdict: exactly one kind, with an explanation. */
export class ConformanceFailure extends Error {
  /** Always `"ConformanceFailure"`. */
  override readonly name = "ConformanceFailure";
  /**
   * A failure of `kind`; the message explains the rule, with `detail` (what the engine did), and
   * ends with the id of the kit's assertion that failed (`[assertion single_generate/usage]`).
   */
  constructor(readonly kind: FailureKind, readonly detail = "", readonly assertion?: string) {
    super(`${kind}: ${EXPLAIN[kind](detail)}${assertion ? ` [assertion ${assertion}]` : ""}`);
  }
}

export function describe(error: unknown): string {
  if (error instanceof Error) {
    const type = (error as { type?: unknown }).type;
    return typeof type === "string"
      ? `${error.name}(${type}): ${error.message}`
      : `${error.name}: ${error.message}`;
  }
  return String(error);
}
