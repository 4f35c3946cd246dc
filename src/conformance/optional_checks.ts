/**
 * The kit's `optional_members` check: the members Dynamo 1.5 added to the contract, each checked
 * only where the engine has it (an engine without them passes: Dynamo's defaults stand in).
 *
 * - `EngineConfig.llm` (and `model_aliases`): typed, and every fact it shares with the flat
 *   1.3 fields equal to theirs.
 * - `onEndpointReady`: resolves when handed an endpoint.
 * - `supportedControls` / `engineControl`: the names are distinct non-empty strings, an engine
 *   that advertises one can run it, and a name not advertised is refused with `InvalidArgument`
 *   naming it (no advertised control is run: one may be destructive).
 * - `healthCheckPayload`: `null`, or a valid request marked `is_probe` that the engine serves to
 *   a terminal chunk.
 * - `isQuiescent`: a boolean or `null`; never `true` while a request streams; not `false` for
 *   long once none is live; and, where the engine has `drain()`, not `false` once it resolved.
 */
import { RequestContext } from "../contract/engine.ts";
import { FLAT_LLM_FIELDS } from "../contract/engine_hooks.ts";
import type { EngineConfig, LLMEngineOutput } from "../contract/types.ts";
import { validateRequest } from "../contract/validate.ts";
import { describe as show } from "../contract/describe.ts";
import { type AssertionId, failAt } from "./assertions.ts";
import { ConformanceFailure, describe } from "./failure.ts";
import { collect, LONG_MAX_TOKENS, request, type State, within } from "./support.ts";

/** The control name the kit asks for, which no engine offers. */
export const UNKNOWN_CONTROL = "kiln.conformance.no-such-control";

/** The `LlmRegistration` fields that hold counts (or a port). */
const COUNTS = [
  ...FLAT_LLM_FIELDS,
  "data_parallel_size",
  "data_parallel_start_rank",
  "bootstrap_port",
];

/** Run `fn`, mapping a throw or a timeout past `ms` to a failure of assertion `id`. */
async function guarded<T>(id: AssertionId, ms: number, what: string, fn: () => Promise<T>) {
  try {
    return await within(Promise.resolve().then(fn), ms, () => new Error(`no answer in ${ms} ms`));
  } catch (e) {
    if (e instanceof ConformanceFailure) throw e;
    throw failAt(id, `${what}: ${describe(e)}`);
  }
}

/** `config.llm` and `config.model_aliases`: typed, and agreeing with the flat fields. */
export function checkLlm(config: EngineConfig): void {
  const aliases: unknown = config.model_aliases;
  if (
    aliases !== undefined &&
    !(Array.isArray(aliases) && aliases.every((a) => typeof a === "string" && a.length > 0))
  ) {
    throw failAt(
      "optional_members/aliases",
      `model_aliases is ${show(aliases)}, not a list of names`,
    );
  }
  const llm: unknown = config.llm;
  if (llm === undefined) return;
  if (typeof llm !== "object" || llm === null || Array.isArray(llm)) {
    throw failAt("optional_members/llm-object", `llm is ${show(llm)}, not an object`);
  }
  const reg = llm as Record<string, unknown>;
  for (const field of COUNTS) {
    const v = reg[field];
    if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) >= 0)) {
      throw failAt("optional_members/llm-counts", `llm.${field} is ${show(v)}, not a count`);
    }
  }
  if (reg.bootstrap_host !== undefined && typeof reg.bootstrap_host !== "string") {
    throw failAt(
      "optional_members/llm-bootstrap-host",
      `llm.bootstrap_host is ${show(reg.bootstrap_host)}, not a string`,
    );
  }
  for (const field of FLAT_LLM_FIELDS) {
    const [nested, flat] = [reg[field], config[field]];
    if (nested !== undefined && flat !== undefined && nested !== flat) {
      throw failAt(
        "optional_members/llm-agrees",
        `llm.${field} is ${show(nested)} but ${field} is ${show(flat)}`,
      );
    }
  }
}

async function checkControls(s: State): Promise<void> {
  const e = s.engine;
  const ms = s.opts.stepTimeoutMs;
  if (e.supportedControls) {
    const list: unknown = await guarded(
      "optional_members/controls-resolve",
      ms,
      "supportedControls()",
      () => e.supportedControls!(),
    );
    const names = Array.isArray(list) ? list : [];
    const ok = Array.isArray(list) && names.every((n) => typeof n === "string" && n.length > 0) &&
      new Set(names).size === names.length;
    if (!ok) {
      throw failAt(
        "optional_members/controls-distinct",
        `supportedControls() gave ${show(list)}, not distinct names`,
      );
    }
    if (names.length > 0 && !e.engineControl) {
      throw failAt(
        "optional_members/controls-runnable",
        `it advertises ${names.join(", ")} but has no engineControl()`,
      );
    }
  }
  if (!e.engineControl) return;
  let outcome: string;
  try {
    const got = await within(
      e.engineControl(UNKNOWN_CONTROL, {}),
      ms,
      () => new Error(`no answer in ${ms} ms`),
    );
    outcome = `it answered ${show(got)}`;
  } catch (err) {
    const { type, message } = err as { type?: unknown; message?: unknown };
    if (type === "InvalidArgument" && String(message).includes(UNKNOWN_CONTROL)) return;
    outcome = `it failed with ${describe(err)}`;
  }
  throw failAt("optional_members/unknown-control-refused", `${UNKNOWN_CONTROL}: ${outcome}`);
}

async function checkHealthCheck(s: State): Promise<void> {
  const e = s.engine;
  if (!e.healthCheckPayload) return;
  const ms = s.opts.stepTimeoutMs;
  const probe = await guarded(
    "optional_members/health-payload-resolves",
    ms,
    "healthCheckPayload()",
    () => e.healthCheckPayload!(),
  );
  if (probe === null) return;
  try {
    validateRequest(probe);
  } catch (err) {
    throw failAt(
      "optional_members/health-payload-valid",
      `the payload is not a valid request: ${describe(err)}`,
    );
  }
  if (probe.is_probe !== true) {
    throw failAt("optional_members/health-payload-probe", "the payload is not marked is_probe");
  }
  const served = "optional_members/health-probe-served";
  const chunks: LLMEngineOutput[] = await within(
    collect(() => e.generate(probe, new RequestContext()), { before: served, after: served }),
    ms,
    () => failAt(served, `no terminal chunk in ${ms} ms`),
  );
  const reason = chunks.at(-1)?.finish_reason;
  if (reason === undefined || typeof reason === "object") {
    throw failAt(
      "optional_members/health-probe-ends",
      `generating it ended with ${show(reason ?? "no terminal chunk")}`,
    );
  }
}

/** Whether the engine is quiescent now, typed (a boolean or null). */
async function quiescent(s: State): Promise<boolean | null> {
  const v: unknown = await guarded(
    "optional_members/quiescent-resolves",
    s.opts.stepTimeoutMs,
    "isQuiescent()",
    () => s.engine.isQuiescent!(),
  );
  if (v === true || v === false || v === null) return v;
  throw failAt("optional_members/quiescent-typed", `isQuiescent() gave ${show(v)}`);
}

async function checkQuiescence(s: State): Promise<void> {
  const e = s.engine;
  if (!e.isQuiescent) return;
  const watch = "optional_members/quiescent-watch-streams";
  const ctx = new RequestContext();
  const req = request(s.config!.model, s.opts.prompt, LONG_MAX_TOKENS);
  let it: AsyncIterator<LLMEngineOutput> | undefined;
  try {
    it = e.generate(req, ctx)[Symbol.asyncIterator]();
    const first = await within(it.next(), s.opts.stepTimeoutMs, () => failAt(watch, "no chunk"));
    if (!first.done && first.value.finish_reason === undefined && await quiescent(s) === true) {
      throw failAt(
        "optional_members/quiescent-busy",
        "isQuiescent() was true while a request was streaming",
      );
    }
  } catch (err) {
    if (err instanceof ConformanceFailure) throw err;
    throw failAt(watch, `the request it watches failed: ${describe(err)}`);
  } finally {
    ctx.stop();
    const rest = (async () => {
      while (it && !(await it.next()).done);
    })().catch(() => {});
    // A stream that ignores its cancel fails the quiescence wait below, not here.
    await within(rest, s.opts.cancelDeadlineMs, () => new Error("still streaming")).catch(
      () => {},
    );
  }
  const deadline = performance.now() + s.opts.cancelDeadlineMs;
  while (await quiescent(s) === false) {
    if (performance.now() > deadline) {
      throw failAt(
        "optional_members/quiescent-settles",
        `isQuiescent() still false ${s.opts.cancelDeadlineMs} ms after the last request ended`,
      );
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  if (!e.drain) return;
  await guarded(
    "optional_members/drain-resolves",
    s.opts.stepTimeoutMs,
    "drain()",
    () => e.drain!(),
  );
  if (await quiescent(s) === false) {
    throw failAt(
      "optional_members/quiescent-after-drain",
      "isQuiescent() was false after drain() resolved",
    );
  }
}

/** The `optional_members` check (see the module's description). */
export async function optionalMembers(s: State): Promise<void> {
  checkLlm(s.config!);
  if (s.engine.onEndpointReady) {
    const endpoint = { namespace: "dynamo", component: "conformance", endpoint: "generate" };
    await guarded(
      "optional_members/endpoint-ready",
      s.opts.stepTimeoutMs,
      "onEndpointReady()",
      () => s.engine.onEndpointReady!(endpoint),
    );
  }
  await checkControls(s);
  await checkHealthCheck(s);
  await checkQuiescence(s);
}
