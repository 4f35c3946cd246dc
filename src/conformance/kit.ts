/**
 * The conformance kit: Dynamo's backend conformance checks, in the same order, against any
 * `LLMEngine`. It uses Web-standard APIs only, so it runs in Node, Deno and browsers.
 */
import { type LLMEngine, RequestContext } from "../contract/engine.ts";
import type { LLMEngineOutput } from "../contract/types.ts";
import { EngineMetrics, testHierarchy } from "../metrics/engine_metrics.ts";
import { cancellation, cancellationMidStream, cancellationPreAborted } from "./cancel_checks.ts";
import { ConformanceFailure, describe, type FailureKind } from "./failure.ts";
import { collect, type ConformanceOptions, request, type State, within } from "./support.ts";

export type { ConformanceOptions } from "./support.ts";
import { checkOverload } from "./overload.ts";
import { optionalMembers } from "./optional_checks.ts";

/** The outcome of one check. */
export interface CheckReport {
  /** The check's name, one of {@linkcode CHECKS}. */
  name: string;
  /** Whether the check passed. */
  passed: boolean;
  /** Time the check took, in milliseconds. */
  ms: number;
  /** The failure's explanation, on a failed check. */
  message?: string;
}

/** The outcome of a conformance run: the checks that ran, in order. */
export interface ConformanceReport {
  /** Whether every check passed. */
  passed: boolean;
  /** The checks that ran; the run stops after the first failure. */
  checks: CheckReport[];
  /** The first broken rule and its explanation, when a check failed. */
  failure?: { kind: FailureKind; message: string };
}

const CONCURRENT = 8;

/** Run `fn`, mapping a throw or a timeout to `kind`. */
async function guard<T>(kind: FailureKind, ms: number, fn: () => Promise<T>): Promise<T> {
  try {
    return await within(
      Promise.resolve().then(fn),
      ms,
      () => new Error(`timed out after ${ms} ms`),
    );
  } catch (e) {
    if (e instanceof ConformanceFailure) throw e;
    throw new ConformanceFailure(kind, describe(e));
  }
}

function ranks(list: readonly { dp_rank: number }[]): number[] {
  return list.map((s) => s.dp_rank);
}

const same = (a: readonly number[], b: readonly number[]) =>
  a.length === b.length && a.every((v, i) => v === b[i]);

type Step = readonly [name: string, run: (s: State) => Promise<void>];

const STEPS: readonly Step[] = [
  ["start", async (s) => {
    const config = await guard("StartFailed", s.opts.stepTimeoutMs, () => s.engine.start(0n));
    if (!config || typeof config.model !== "string" || config.model.length === 0) {
      throw new ConformanceFailure("EmptyModelInConfig");
    }
    s.config = config;
  }],
  ["kv_event_sources", async (s) => {
    const call = () =>
      guard(
        "KvEventSourcesFailed",
        s.opts.stepTimeoutMs,
        async () => ranks(await s.engine.kvEventSources?.() ?? []),
      );
    const [a, b] = [await call(), await call()];
    if (!same(a, b)) {
      throw new ConformanceFailure("KvEventSourcesNotIdempotent", `[${a}] then [${b}]`);
    }
  }],
  ["setup_metrics", async (s) => {
    const metrics = EngineMetrics.fromHierarchy(testHierarchy());
    const ctx = { model: "test-model", component: "test", model_load_time_seconds: 0, metrics };
    const call = () =>
      guard(
        "SetupMetricsFailed",
        s.opts.stepTimeoutMs,
        async () => (await s.engine.setupMetrics?.(ctx))?.dp_ranks ?? [],
      );
    const [a, b] = [await call(), await call()];
    if (!same(a, b)) {
      throw new ConformanceFailure("ComponentMetricsNotIdempotent", `[${a}] then [${b}]`);
    }
  }],
  ["single_generate", async (s) => {
    const req = request(s.config!.model, s.opts.prompt, 8);
    const chunks = await within(
      collect(() => s.engine.generate(req, new RequestContext())),
      s.opts.stepTimeoutMs,
      () =>
        new ConformanceFailure(
          "GenerateFailed",
          `no terminal chunk within ${s.opts.stepTimeoutMs} ms`,
        ),
    );
    if (chunks.length === 0) throw new ConformanceFailure("NoChunksYielded");
    const terminals = chunks.flatMap((c, i) => (c.finish_reason !== undefined ? [i] : []));
    if (terminals.length === 0) throw new ConformanceFailure("NoTerminalChunk");
    if (terminals.length > 1 || terminals[0] !== chunks.length - 1) {
      throw new ConformanceFailure("ChunkAfterTerminal");
    }
    const usage = chunks[chunks.length - 1]!.completion_usage;
    const streamed = chunks.reduce((n, c) => n + c.token_ids.length, 0);
    if (usage !== undefined && usage.completion_tokens !== streamed) {
      throw new ConformanceFailure(
        "CompletionTokensMismatch",
        `streamed ${streamed}, reported ${usage.completion_tokens}`,
      );
    }
  }],
  ["concurrent_generates", async (s) => {
    const one = async () => {
      const req = request(s.config!.model, s.opts.prompt, 8);
      let chunks: LLMEngineOutput[];
      try {
        chunks = await collect(() => s.engine.generate(req, new RequestContext()));
      } catch (e) {
        throw new ConformanceFailure(
          "ConcurrentGenerateFailed",
          e instanceof ConformanceFailure ? e.detail : describe(e),
        );
      }
      if (chunks.length === 0) {
        throw new ConformanceFailure("ConcurrentGenerateFailed", "stream was empty");
      }
    };
    await within(
      Promise.all(Array.from({ length: CONCURRENT }, one)).then(() => undefined),
      s.opts.stepTimeoutMs,
      () =>
        new ConformanceFailure(
          "ConcurrentGenerateFailed",
          `not done within ${s.opts.stepTimeoutMs} ms`,
        ),
    );
  }],
  ["cancellation", cancellation],
  ["cancellation_mid_stream", cancellationMidStream],
  ["cancellation_pre_aborted", cancellationPreAborted],
  // Dynamo 1.5's members, where the engine has them; ends with drain() where it has both.
  ["optional_members", optionalMembers],
  ["cleanup", (s) => guard("CleanupFailed", s.opts.stepTimeoutMs, () => s.engine.cleanup())],
  [
    "second_cleanup",
    (s) => guard("SecondCleanupFailed", s.opts.stepTimeoutMs, () => s.engine.cleanup()),
  ],
  [
    "cleanup_without_start",
    (s) =>
      guard("CleanupWithoutStartFailed", s.opts.stepTimeoutMs, async () => {
        const fresh = s.factory();
        await fresh.cleanup();
      }),
  ],
  // More work than the KV cache holds, on a fresh engine: every stream must still end.
  ["kv_cache_overload", async (s) => {
    const engine = s.engine = s.factory();
    const config = await guard("StartFailed", s.opts.stepTimeoutMs, () => engine.start(0n));
    try {
      await checkOverload(engine, config, s.opts.prompt, s.opts.stepTimeoutMs);
    } finally {
      await engine.cleanup().catch(() => {});
    }
  }],
];

/** The names of the checks, in the order they run. */
export const CHECKS: readonly string[] = STEPS.map(([name]) => name);

async function execute(
  factory: () => LLMEngine,
  options: ConformanceOptions,
): Promise<{ report: ConformanceReport; failure?: ConformanceFailure }> {
  const state: State = {
    engine: factory(),
    factory,
    opts: {
      cancelDeadlineMs: options.cancelDeadlineMs ?? 2000,
      stepTimeoutMs: options.stepTimeoutMs ?? 120_000,
      prompt: options.prompt ?? [1, 2, 3],
    },
  };
  const checks: CheckReport[] = [];
  for (const [name, run] of STEPS) {
    const t0 = performance.now();
    try {
      await run(state);
      checks.push({ name, passed: true, ms: performance.now() - t0 });
    } catch (e) {
      const failure = e instanceof ConformanceFailure
        ? e
        : new ConformanceFailure("StartFailed", describe(e));
      checks.push({ name, passed: false, ms: performance.now() - t0, message: failure.message });
      // Best effort: release what the engine holds; the verdict is already decided.
      await state.engine.cleanup().catch(() => {});
      const report = {
        passed: false,
        checks,
        failure: { kind: failure.kind, message: failure.message },
      };
      return { report, failure };
    }
  }
  return { report: { passed: true, checks } };
}

/** Run every check and report each; stops at the first failure, as the seed does. */
export async function runConformanceReport(
  factory: () => LLMEngine,
  options: ConformanceOptions = {},
): Promise<ConformanceReport> {
  return (await execute(factory, options)).report;
}

/** Run the kit; rejects with a {@linkcode ConformanceFailure} naming the first broken rule. */
export async function runConformance(
  factory: () => LLMEngine,
  options: ConformanceOptions = {},
): Promise<void> {
  const { failure } = await execute(factory, options);
  if (failure) throw failure;
}

/** One line per check, then a verdict line; the same text in a terminal and a page. */
export function formatReport(report: ConformanceReport): string {
  const lines = report.checks.map((c) =>
    `${c.passed ? "ok  " : "FAIL"} ${c.name.padEnd(24)} ${c.ms.toFixed(1).padStart(8)} ms${
      c.message ? `  ${c.message}` : ""
    }`
  );
  lines.push(
    report.passed
      ? `conformance: PASS (${report.checks.length} checks)`
      : `conformance: FAIL ${report.failure!.kind}`,
  );
  return lines.join("\n");
}
