/**
 * One broken engine per assertion of the kit (`assertions.ts`): each is the mock engine with one
 * member, or the requests of one check, changed so that exactly that assertion fails and every
 * other check still passes. The kit's self-test (`assertions_test.ts`) runs the whole kit
 * against each, with `keepGoing`.
 */
import type { LLMEngine } from "../contract/engine.ts";
import { probeRequest } from "../contract/engine_hooks.ts";
import * as out from "../contract/output.ts";
import type { EngineConfig } from "../contract/types.ts";
import type { MockEngineOptions } from "../engines/mock/mock_engine.ts";
import type { AssertionId } from "./assertions.ts";
import {
  append,
  broke,
  ending,
  mapChunks,
  ownTokens,
  type Phase,
  Sabotaged,
  type Serve,
} from "./sabotage.ts";

/** A broken engine: what it changes, and whether it hangs (so the kit waits for a bound). */
export interface Breakage {
  /** Changes a fresh engine (the factory's `e.instance`-th). */
  patch: (e: Sabotaged) => void;
  /** It hangs where the kit waits for the step's bound: run it with a short one. */
  hangs?: boolean;
}

const on = (phase: Phase, serve: (e: Sabotaged) => Serve, hangs = false): Breakage => ({
  patch: (e) => void e.serve.set(phase, serve(e)),
  hangs,
});

/** Replace member `name` of the main engine (instance 0) with `value` (undefined: remove it). */
const member = (name: keyof LLMEngine, value: unknown): Breakage => ({
  patch: (e) => {
    if (e.instance === 0) (e as unknown as Record<string, unknown>)[name] = value;
  },
});

/** The main engine's start() reports `edit(config)`. */
const config = (edit: (c: EngineConfig) => EngineConfig): Breakage => ({
  patch: (e) => {
    const start = e.start.bind(e);
    e.start = async (id) => (e.instance === 0 ? edit(await start(id)) : start(id));
  },
});

const rejecting = (what: string) => () => Promise.reject(broke(what));

/** A stream that yields nothing until the request's cancel or the engine's cleanup. */
const hang = (e: Sabotaged): Serve => (_inner, req, ctx) =>
  ownTokens(0, () => e.until(ctx.signal).then(() => [ending("cancelled", req.token_ids.length)]));
/** Two tokens of its own, then waits for the engine's cleanup only (it ignores the cancel). */
const deafAfterTwo = (e: Sabotaged): Serve => (_inner, req) =>
  ownTokens(2, () => e.until().then(() => [ending("length", req.token_ids.length, 2)]));
const throwsAtOnce: Serve = () => ownTokens(0, () => Promise.reject(broke("generate")));
const throwsAfterOne: Serve = () => ownTokens(1, () => Promise.reject(broke("mid-stream")));
const empty: Serve = () => ownTokens(0, () => []);
const noTerminal: Serve = (inner) => mapChunks(inner(), (c) => c.finish_reason ? undefined : c);
const afterTerminal: Serve = (inner) => append(inner(), out.token(1));
const syncThrow: Serve = () => {
  throw broke("generate() itself");
};
/** Its stream's `cancelled` ending rewritten as `length`. */
const cancelledAsLength: Serve = (inner) =>
  mapChunks(
    inner(),
    (c) => (c.finish_reason === "cancelled" ? { ...c, finish_reason: "length" } : c),
  );

/** Every assertion's broken engine. */
export const BREAKAGES: Record<AssertionId, Breakage> = {
  "start/resolves": member("start", rejecting("start")),
  "start/model": config((c) => ({ ...c, model: "" })),
  "kv_event_sources/resolves": member("kvEventSources", rejecting("kvEventSources")),
  "kv_event_sources/idempotent": {
    patch: (e) => {
      let n = 0;
      e.kvEventSources = async () =>
        (await e.inner.kvEventSources()).map((s) => ({ ...s, dp_rank: s.dp_rank + n++ }));
    },
  },
  "setup_metrics/resolves": member("setupMetrics", rejecting("setupMetrics")),
  "setup_metrics/idempotent": {
    patch: (e) => {
      let n = 0;
      e.setupMetrics = async (ctx) => ({
        dp_ranks: [...(await e.inner.setupMetrics(ctx)).dp_ranks, n++],
      });
    },
  },
  "single_generate/ends": on("single", hang, true),
  "single_generate/no-error-before-chunk": on("single", () => throwsAtOnce),
  "single_generate/no-error-after-chunk": on("single", () => throwsAfterOne),
  "single_generate/chunks": on("single", () => empty),
  "single_generate/terminal": on("single", () => noTerminal),
  "single_generate/terminal-last": on("single", () => afterTerminal),
  // One token more than asked for (and counted in its usage).
  "single_generate/max-tokens": on("single", (e) => (_inner, req, ctx) => {
    const max = req.stop_conditions.max_tokens! + 1;
    return e.inner.generate({
      ...req,
      stop_conditions: { ...req.stop_conditions, max_tokens: max },
    }, ctx);
  }),
  "single_generate/usage": on("single", () => (inner) =>
    mapChunks(inner(), (c) => {
      const u = c.completion_usage;
      return u ? out.withUsage(c, out.usage(u.prompt_tokens, u.completion_tokens + 1)) : c;
    })),
  "concurrent_generates/ends": on("concurrent", hang, true),
  "concurrent_generates/no-error-before-chunk": on("concurrent", () => throwsAtOnce),
  "concurrent_generates/no-error-after-chunk": on("concurrent", () => throwsAfterOne),
  "concurrent_generates/chunks": on("concurrent", () => empty),
  "concurrent_generates/terminal": on("concurrent", () => noTerminal),
  "concurrent_generates/terminal-last": on("concurrent", () => afterTerminal),
  "cancellation/generate-sync": on("cancel", () => syncThrow),
  "cancellation/ends": on("cancel", deafAfterTwo),
  "cancellation/no-error-before-chunk": on("cancel", () => throwsAtOnce),
  "cancellation/no-error-after-chunk": on("cancel", () => throwsAfterOne),
  "cancellation/chunks": on("cancel", () => empty),
  "cancellation/terminal-last": on(
    "cancel",
    () => (inner, req) => append(inner(), ending("cancelled", req.token_ids.length)),
  ),
  "cancellation/finish": on("cancel", () => cancelledAsLength),
  "cancellation_mid_stream/generate-sync": on("mid", () => syncThrow),
  "cancellation_mid_stream/first-chunks": on("mid", hang, true),
  "cancellation_mid_stream/no-error-before-chunk": on("mid", () => throwsAtOnce),
  "cancellation_mid_stream/no-error-after-chunk": on("mid", () => throwsAfterOne),
  "cancellation_mid_stream/not-early": on(
    "mid",
    () => (_inner, req) => ownTokens(1, () => [ending("length", req.token_ids.length, 1)]),
  ),
  "cancellation_mid_stream/ends": on("mid", deafAfterTwo),
  "cancellation_mid_stream/no-error-after-cancel": on(
    "mid",
    (e) => (_inner, _req, ctx) =>
      ownTokens(2, () => e.until(ctx.signal).then(() => Promise.reject(broke("on cancel")))),
  ),
  // Honours a cancel before the first pull (the `cancellation` check passes), but a stream
  // cancelled while it runs ends with `length`, as if max_tokens had been reached.
  "cancellation_mid_stream/finish": on("mid", () => cancelledAsLength),
  "cancellation_pre_aborted/generate-sync": on("pre", () => syncThrow),
  "cancellation_pre_aborted/no-error-before-chunk": on("pre", () => throwsAtOnce),
  "cancellation_pre_aborted/no-error-after-chunk": on(
    "pre",
    () => () =>
      ownTokens(0, async function* () {
        yield { token_ids: [] };
        throw broke("after an empty chunk");
      }),
  ),
  "cancellation_pre_aborted/ends": on(
    "pre",
    (e) => (_inner, req) =>
      ownTokens(0, () => e.until().then(() => [ending("length", req.token_ids.length)])),
  ),
  "cancellation_pre_aborted/no-tokens": on(
    "pre",
    () => (_inner, req) => ownTokens(1, () => [ending("cancelled", req.token_ids.length, 1)]),
  ),
  "cancellation_pre_aborted/terminal": on("pre", () => empty),
  "cancellation_pre_aborted/finish": on("pre", () => cancelledAsLength),
  "optional_members/aliases": config((c) => ({ ...c, model_aliases: [""] })),
  "optional_members/llm-object": config((c) => ({
    ...c,
    llm: [] as NonNullable<EngineConfig["llm"]>,
  })),
  "optional_members/llm-counts": config((c) => ({ ...c, llm: { ...c.llm, max_num_seqs: -1 } })),
  "optional_members/llm-bootstrap-host": config((c) => ({
    ...c,
    llm: { ...c.llm, bootstrap_host: 7 as unknown as string },
  })),
  "optional_members/llm-agrees": config((c) => ({
    ...c,
    llm: { ...c.llm, total_kv_blocks: c.total_kv_blocks! + 1 },
  })),
  "optional_members/endpoint-ready": member("onEndpointReady", rejecting("onEndpointReady")),
  "optional_members/controls-resolve": member("supportedControls", rejecting("controls")),
  "optional_members/controls-distinct": member(
    "supportedControls",
    () => Promise.resolve(["a", "a"]),
  ),
  "optional_members/controls-runnable": {
    patch: (e) => {
      member("supportedControls", () => Promise.resolve(["clear_kv_blocks"])).patch(e);
      member("engineControl", undefined).patch(e);
    },
  },
  "optional_members/unknown-control-refused": member(
    "engineControl",
    () => Promise.resolve({ status: "success" }),
  ),
  "optional_members/health-payload-resolves": member("healthCheckPayload", rejecting("payload")),
  "optional_members/health-payload-valid": member(
    "healthCheckPayload",
    () => Promise.resolve({ ...probeRequest("sabotaged", 0), token_ids: [-1] }),
  ),
  "optional_members/health-payload-probe": member("healthCheckPayload", () => {
    const { is_probe: _, ...plain } = probeRequest("sabotaged", 0);
    return Promise.resolve(plain);
  }),
  "optional_members/health-probe-served": on("probe", () => throwsAtOnce),
  "optional_members/health-probe-ends": on(
    "probe",
    () => () => ownTokens(0, () => [out.withUsage(out.error("probe"), out.usage(1, 0))]),
  ),
  "optional_members/quiescent-resolves": member("isQuiescent", rejecting("isQuiescent")),
  "optional_members/quiescent-typed": member("isQuiescent", () => Promise.resolve("yes")),
  "optional_members/quiescent-watch-streams": on("watch", () => throwsAtOnce),
  "optional_members/quiescent-busy": member("isQuiescent", () => Promise.resolve(true)),
  "optional_members/quiescent-settles": member("isQuiescent", () => Promise.resolve(false)),
  "optional_members/drain-resolves": member("drain", rejecting("drain")),
  "optional_members/quiescent-after-drain": {
    patch: (e) => {
      let drained = false;
      e.drain = () => e.inner.drain().then(() => void (drained = true));
      e.isQuiescent = () => Promise.resolve(drained ? false : null);
    },
  },
  "cleanup/resolves": {
    patch: (e) => {
      const cleanup = e.cleanup.bind(e);
      let n = 0;
      e.cleanup = () =>
        e.instance === 0 && n++ === 0 ? Promise.reject(broke("first cleanup")) : cleanup();
    },
  },
  "second_cleanup/resolves": {
    patch: (e) => {
      const cleanup = e.cleanup.bind(e);
      e.cleanup = () =>
        e.instance === 0 && e.cleanups > 0 ? Promise.reject(broke("second cleanup")) : cleanup();
    },
  },
  "cleanup_without_start/resolves": {
    patch: (e) => {
      const cleanup = e.cleanup.bind(e);
      e.cleanup = () => (e.started ? cleanup() : Promise.reject(broke("cleanup before start")));
    },
  },
  "kv_cache_overload/start": {
    patch: (e) => {
      if (e.instance > 0) e.start = rejecting("a second engine's start");
    },
  },
  "kv_cache_overload/ends": on("overload", hang, true),
  "kv_cache_overload/no-error-before-chunk": on("overload", () => throwsAtOnce),
  "kv_cache_overload/no-error-after-chunk": on("overload", () => throwsAfterOne),
  "kv_cache_overload/chunks": on("overload", () => empty),
  "kv_cache_overload/terminal": on("overload", () => noTerminal),
  "kv_cache_overload/terminal-last": on("overload", () => afterTerminal),
  "kv_cache_overload/not-cancelled": on(
    "overload",
    () => (_inner, req) => ownTokens(0, () => [ending("cancelled", req.token_ids.length)]),
  ),
  "kv_cache_overload/short-served": on(
    "overload",
    () => (inner, req) =>
      req.token_ids.length > 8
        ? inner()
        : ownTokens(0, () => [out.withUsage(out.error("no room"), out.usage(3, 0))]),
  ),
};

/** The factory of assertion `id`'s broken engine, each made on a mock with `options`. */
export function brokenFor(id: AssertionId, options: MockEngineOptions = {}): () => LLMEngine {
  let made = 0;
  return () => {
    const e = new Sabotaged(made++, options);
    BREAKAGES[id].patch(e);
    return e;
  };
}
