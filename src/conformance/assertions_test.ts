/**
 * The kit's self-test: every assertion the kit makes (`ASSERTIONS`) is made somewhere in the
 * kit, and for each one an engine that breaks exactly it (`BREAKAGES`) fails exactly that check,
 * naming that assertion, while every other check passes. Plus a planted error: the mid-stream
 * cancel check loosened to accept any finish reason lets through an engine that ends a cancelled
 * stream with `length`.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { RequestContext } from "../contract/engine.ts";
import type { LLMEngineOutput } from "../contract/types.ts";
import { type AssertionId, ASSERTIONS, checkOf } from "./assertions.ts";
import { BREAKAGES, brokenFor } from "./broken_assertions.ts";
import { cancellation, cancellationMidStream } from "./cancel_checks.ts";
import { ConformanceFailure } from "./failure.ts";
import { CHECKS, formatReport, runConformanceReport } from "./kit.ts";
import { Sabotaged } from "./sabotage.ts";
import { LONG_MAX_TOKENS, request, type State } from "./support.ts";

const IDS = Object.keys(ASSERTIONS) as AssertionId[];
/** The kit's sources: every place it can fail an engine is in one of them. */
const SOURCES = ["kit.ts", "cancel_checks.ts", "optional_checks.ts", "overload.ts", "support.ts"];
/** Short bounds: the broken engines that hang cost one step's bound each. */
const CANCEL_MS = 1000;
const HANG_STEP_MS = 3000;

Deno.test("every assertion the kit makes is in the table, and every one in the table is made", async () => {
  const made = new Set<string>();
  for (const file of SOURCES) {
    const text = await Deno.readTextFile(new URL(`./${file}`, import.meta.url));
    // One failure without an assertion: kit.ts's CheckCrashed, for what no assertion expects.
    const bare = text.split("new ConformanceFailure(").length - 1;
    equal(bare, file === "kit.ts" ? 1 : 0, `${file} fails an engine without an assertion id`);
    for (const m of text.matchAll(/"([a-z_]+\/[a-z0-9-]+)"/g)) made.add(m[1]!);
  }
  deepStrictEqual([...made].sort(), [...IDS].sort());
  for (const id of IDS) ok(CHECKS.includes(checkOf(id)), `${id}: no check ${checkOf(id)}`);
  deepStrictEqual(Object.keys(BREAKAGES).sort(), [...IDS].sort());
  // Every check makes at least one assertion.
  deepStrictEqual([...new Set(IDS.map(checkOf))].sort(), [...CHECKS].sort());
});

Deno.test("the sabotage base, with nothing broken, passes every check", async () => {
  let made = 0;
  const report = await runConformanceReport(() => new Sabotaged(made++), {
    keepGoing: true,
    cancelDeadlineMs: CANCEL_MS,
  });
  ok(report.passed, formatReport(report));
  equal(report.checks.length, CHECKS.length);
});

for (const id of IDS) {
  const check = checkOf(id);
  Deno.test(`broken for ${id}: only ${check} fails, naming ${id}`, async () => {
    const report = await runConformanceReport(brokenFor(id), {
      keepGoing: true,
      cancelDeadlineMs: CANCEL_MS,
      ...(BREAKAGES[id].hangs ? { stepTimeoutMs: HANG_STEP_MS } : {}),
    });
    const text = formatReport(report);
    equal(report.passed, false, text);
    const failed = report.checks.filter((c) => !c.passed);
    deepStrictEqual(failed.map((c) => c.name), [check], text);
    equal(failed[0]!.assertion, id, text);
    const kind = ASSERTIONS[id].kind;
    ok(failed[0]!.message!.startsWith(`${kind}: `), text);
    ok(failed[0]!.message!.endsWith(`[assertion ${id}]`), text);
    deepStrictEqual(report.failure, { kind, message: failed[0]!.message, assertion: id });
    // Every other check ran and passed; a failed start leaves nothing to run the rest on.
    const ran = id === "start/resolves" ? ["start"] : CHECKS;
    deepStrictEqual(report.checks.map((c) => c.name), [...ran], text);
  });
}

Deno.test("without keepGoing the kit still stops at the first failure", async () => {
  const report = await runConformanceReport(brokenFor("single_generate/usage"));
  deepStrictEqual(
    report.checks.map((c) => c.name),
    CHECKS.slice(0, CHECKS.indexOf("single_generate") + 1),
  );
  equal(report.failure?.assertion, "single_generate/usage");
});

/** The planted error: the mid-stream check's last assertion accepting any finish reason. */
function looseFinish(last: LLMEngineOutput | undefined): void {
  if (last === undefined) throw new Error("no terminal chunk");
}

/** Run the cancellation checks as the kit does, the mid-stream one with `finish`. */
async function midStream(finish?: typeof looseFinish): Promise<void> {
  const engine = brokenFor("cancellation_mid_stream/finish")();
  const s: State = {
    engine,
    factory: () => engine,
    config: await engine.start(0n),
    opts: {
      cancelDeadlineMs: CANCEL_MS,
      stepTimeoutMs: 120_000,
      prompt: [1, 2, 3],
      keepGoing: false,
    },
  };
  try {
    await cancellation(s); // a cancel before the first pull is honoured: this passes
    await (finish ? cancellationMidStream(s, finish) : cancellationMidStream(s));
  } finally {
    await engine.cleanup();
  }
}

Deno.test("planted error: a mid-stream cancel check that accepts any finish reason passes the length-ending engine", async () => {
  // The engine really ends a cancelled stream with length: the mock's own cancel, relabelled.
  const e = brokenFor("cancellation_mid_stream/finish")();
  await e.start(0n);
  const ctx = new RequestContext();
  const req = request("m", [1], LONG_MAX_TOKENS);
  const reasons: unknown[] = [];
  e.generate(req, new RequestContext()); // the `cancellation` check's request
  for await (const c of e.generate(req, ctx)) {
    if (c.finish_reason !== undefined) reasons.push(c.finish_reason);
    else ctx.stop();
  }
  await e.cleanup();
  deepStrictEqual(reasons, ["length"]);
  // The loosened check lets it through; the kit's check rejects it, naming the assertion.
  await midStream(looseFinish);
  await rejects(midStream(), (err: unknown) => {
    ok(err instanceof ConformanceFailure, String(err));
    equal(err.assertion, "cancellation_mid_stream/finish");
    ok(err.message.includes('finish_reason "length"'), err.message);
    return true;
  });
});
