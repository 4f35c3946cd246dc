/**
 * The conformance kit: Dynamo's backend conformance checks, in the same order, against any
 * `LLMEngine`. It uses Web-standard APIs only, so it runs in Node, Deno and browsers.
 */
import { type LLMEngine, RequestContext } from "../contract/engine.ts";
import { EngineMetrics, testHierarchy } from "../contract/metrics/engine_metrics.ts";
import { cancellation, cancellationMidStream, cancellationPreAborted } from "./cancel_checks.ts";
import { type AssertionId, failAt } from "./assertions.ts";
import { ConformanceFailure, describe, type FailureKind } from "./failure.ts";
import {
  checkShape,
  collect,
  type ConformanceOptions,
  request,
  type State,
  within,
} from "./support.ts";

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
  /** The id of the assertion that failed (one of `ASSERTIONS`), on a failed check. */
  assertion?: string;
}

/** The outcome of a conformance run: the checks that ran, in order. */
export interface ConformanceReport {
  /** Whether every check passed. */
  passed: boolean;
  /** The checks that ran; the run stops after the first failure unless `keepGoing`. */
  checks: CheckReport[];
  /** The first broken rule and its explanation, when a check failed. */
  failure?: { kind: FailureKind; message: string; assertion?: string };
}

const CONCURRENT = 8;

/** Run `fn`, mapping a throw or a timeout to a failure of assertion `id`. */
async function guard<T>(id: AssertionId, ms: number, fn: () => Promise<T>): Promise<T> {
  try {
    return await within(
      Promise.resolve().then(fn),
      ms,
      () => new Error(`timed out after ${ms} ms`),
    );
  } catch (e) {
    if (e instanceof ConformanceFailure) throw e;
    throw failAt(id, describe(e));
  }
}

function ranks(list: readonly { dp_rank: number }[]): number[] {
  return list.map((s) => s.dp_rank);
}

const same = (a: readonly number[], b: readonly number[]) =>
  a.length === b.length && a.every((v, i) => v === b[i]);

type Step = readonly [name: string, run: (s: State) => Promise<void>];

/** `max_tokens` of single_generate's request. */
const SINGLE_MAX_TOKENS = 8;

async function singleGenerate(s: State): Promise<void> {
  const req = request(s.config!.model, s.opts.prompt, SINGLE_MAX_TOKENS);
  const chunks = await within(
    collect(() => s.engine.generate(req, new RequestContext()), {
      before: "single_generate/no-error-before-chunk",
      after: "single_generate/no-error-after-chunk",
    }),
    s.opts.stepTimeoutMs,
    () => failAt("single_generate/ends", `no terminal chunk within ${s.opts.stepTimeoutMs} ms`),
  );
  checkShape(chunks, {
    chunks: "single_generate/chunks",
    terminal: "single_generate/terminal",
    last: "single_generate/terminal-last",
  });
  const usage = chunks[chunks.length - 1]!.completion_usage;
  const streamed = chunks.reduce((n, c) => n + c.token_ids.length, 0);
  if (streamed > SINGLE_MAX_TOKENS) {
    throw failAt(
      "single_generate/max-tokens",
      `it streamed ${streamed} tokens with max_tokens ${SINGLE_MAX_TOKENS}`,
    );
  }
  if (usage !== undefined && usage.completion_tokens !== streamed) {
    throw failAt(
      "single_generate/usage",
      `streamed ${streamed}, reported ${usage.completion_tokens}`,
    );
  }
}

/** Eight requests at once: each must succeed and be a whole stream. */
async function concurrentGenerates(s: State): Promise<void> {
  const one = async (i: number) => {
    const req = request(s.config!.model, s.opts.prompt, 8);
    const label = `stream ${i + 1} of ${CONCURRENT}`;
    const chunks = await collect(() => s.engine.generate(req, new RequestContext()), {
      before: "concurrent_generates/no-error-before-chunk",
      after: "concurrent_generates/no-error-after-chunk",
    }, label);
    checkShape(chunks, {
      chunks: "concurrent_generates/chunks",
      terminal: "concurrent_generates/terminal",
      last: "concurrent_generates/terminal-last",
    }, label);
  };
  await within(
    Promise.all(Array.from({ length: CONCURRENT }, (_, i) => one(i))).then(() => undefined),
    s.opts.stepTimeoutMs,
    () => failAt("concurrent_generates/ends", `not done within ${s.opts.stepTimeoutMs} ms`),
  );
}

const STEPS: readonly Step[] = [
  ["start", async (s) => {
    const config = await guard("start/resolves", s.opts.stepTimeoutMs, () => s.engine.start(0n));
    // Kept even without a model, so that keepGoing checks the rest with it.
    if (config && typeof config === "object") s.config = config;
    if (!config || typeof config.model !== "string" || config.model.length === 0) {
      throw failAt("start/model");
    }
  }],
  ["kv_event_sources", async (s) => {
    const call = () =>
      guard(
        "kv_event_sources/resolves",
        s.opts.stepTimeoutMs,
        async () => ranks(await s.engine.kvEventSources?.() ?? []),
      );
    const [a, b] = [await call(), await call()];
    if (!same(a, b)) throw failAt("kv_event_sources/idempotent", `[${a}] then [${b}]`);
  }],
  ["setup_metrics", async (s) => {
    const metrics = EngineMetrics.fromHierarchy(testHierarchy());
    const ctx = { model: "test-model", component: "test", model_load_time_seconds: 0, metrics };
    const call = () =>
      guard(
        "setup_metrics/resolves",
        s.opts.stepTimeoutMs,
        async () => (await s.engine.setupMetrics?.(ctx))?.dp_ranks ?? [],
      );
    const [a, b] = [await call(), await call()];
    if (!same(a, b)) throw failAt("setup_metrics/idempotent", `[${a}] then [${b}]`);
  }],
  ["single_generate", singleGenerate],
  ["concurrent_generates", concurrentGenerates],
  ["cancellation", cancellation],
  ["cancellation_mid_stream", cancellationMidStream],
  ["cancellation_pre_aborted", cancellationPreAborted],
  // Dynamo 1.5's members, where the engine has them; ends with drain() where it has both.
  ["optional_members", optionalMembers],
  ["cleanup", (s) => guard("cleanup/resolves", s.opts.stepTimeoutMs, () => s.engine.cleanup())],
  [
    "second_cleanup",
    (s) => guard("second_cleanup/resolves", s.opts.stepTimeoutMs, () => s.engine.cleanup()),
  ],
  [
    "cleanup_without_start",
    (s) =>
      guard("cleanup_without_start/resolves", s.opts.stepTimeoutMs, async () => {
        const fresh = s.factory();
        await fresh.cleanup();
      }),
  ],
  // More work than the KV cache holds, on a fresh engine: every stream must still end.
  ["kv_cache_overload", async (s) => {
    const config = await guard("kv_cache_overload/start", s.opts.stepTimeoutMs, () => {
      s.engine = s.factory();
      return s.engine.start(0n);
    });
    const engine = s.engine;
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
      keepGoing: options.keepGoing ?? false,
    },
  };
  const checks: CheckReport[] = [];
  let first: ConformanceFailure | undefined;
  for (const [name, run] of STEPS) {
    const t0 = performance.now();
    try {
      await run(state);
      checks.push({ name, passed: true, ms: performance.now() - t0 });
    } catch (thrown) {
      // Every place the kit calls the engine maps what it does to an assertion; anything else
      // (a chunk that is not an object, say) still fails this check, as no assertion of its.
      const e = thrown instanceof ConformanceFailure
        ? thrown
        : new ConformanceFailure("CheckCrashed", describe(thrown));
      const at = e.assertion === undefined ? {} : { assertion: e.assertion };
      checks.push({ name, passed: false, ms: performance.now() - t0, message: e.message, ...at });
      first ??= e;
      if (!state.opts.keepGoing || state.config === undefined) break;
    }
  }
  if (first === undefined) return { report: { passed: true, checks } };
  // Best effort: release what the engine holds; the verdict is already decided.
  await state.engine.cleanup().catch(() => {});
  const at = first.assertion === undefined ? {} : { assertion: first.assertion };
  const failure = { kind: first.kind, message: first.message, ...at };
  return { report: { passed: false, checks, failure }, failure: first };
}

/**
 * Run every check and report each; stops at the first failure, as the seed does, unless
 * `options.keepGoing`.
 */
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
