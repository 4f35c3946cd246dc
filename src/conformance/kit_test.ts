import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { MockEngine } from "../engines/mock/mock_engine.ts";
import { brokenEngine } from "./broken.ts";
import { ConformanceFailure, FAILURE_KINDS } from "./failure.ts";
import { CHECKS, formatReport, runConformance, runConformanceReport } from "./kit.ts";

Deno.test("the mock engine passes every check, in the seed's order", async () => {
  await runConformance(() => new MockEngine());
  const report = await runConformanceReport(() => new MockEngine({ delayMs: 1 }));
  ok(report.passed, formatReport(report));
  deepStrictEqual(report.checks.map((c) => c.name), [...CHECKS]);
  deepStrictEqual(CHECKS, [
    "start",
    "kv_event_sources",
    "setup_metrics",
    "single_generate",
    "concurrent_generates",
    "cancellation",
    "cancellation_mid_stream",
    "cancellation_pre_aborted",
    "optional_members",
    "cleanup",
    "second_cleanup",
    "cleanup_without_start",
    "kv_cache_overload",
  ]);
  ok(report.checks.every((c) => c.passed && c.ms >= 0));
  ok(formatReport(report).endsWith("conformance: PASS (13 checks)"));
});

for (const kind of FAILURE_KINDS) {
  Deno.test(`an engine broken for ${kind} is reported as exactly ${kind}`, async () => {
    // A stalled engine fails when the step's bound passes: a short one here (the mock is fast).
    const options = kind === "OverloadStalled" ? { stepTimeoutMs: 1000 } : {};
    await rejects(runConformance(brokenEngine(kind), options), (e: unknown) => {
      ok(e instanceof ConformanceFailure, String(e));
      equal(e.kind, kind);
      ok(e.message.startsWith(`${kind}: `));
      return true;
    });
    const report = await runConformanceReport(brokenEngine(kind), options);
    equal(report.passed, false);
    equal(report.failure?.kind, kind);
    const last = report.checks[report.checks.length - 1]!;
    equal(last.passed, false);
    ok(report.checks.slice(0, -1).every((c) => c.passed), "checks before the failing one passed");
    ok(formatReport(report).includes(kind));
  });
}

Deno.test("the cancellation checks fail for what each broken engine does, at the right check", async () => {
  const mid = await runConformanceReport(brokenEngine("MidStreamCancellationNotObserved"));
  equal(mid.checks.at(-1)?.name, "cancellation_mid_stream");
  ok(
    /no terminal chunk within 2000 ms of the cancel/.test(mid.failure!.message),
    mid.failure!.message,
  );
  const pre = await runConformanceReport(brokenEngine("PreAbortedRequestNotCancelled"));
  equal(pre.checks.at(-1)?.name, "cancellation_pre_aborted");
  ok(/yielded \d+ token/.test(pre.failure!.message), pre.failure!.message);
  // Both passed the cancel-before-the-first-pull check, which alone did not catch them.
  for (const r of [mid, pre]) ok(r.checks.find((c) => c.name === "cancellation")?.passed);
});

Deno.test("a hanging start() fails as StartFailed instead of hanging the kit", async () => {
  const hanging = () => {
    const e = new MockEngine();
    e.start = () => new Promise(() => {});
    return e;
  };
  const report = await runConformanceReport(hanging, { stepTimeoutMs: 50 });
  equal(report.failure?.kind, "StartFailed");
  ok(report.failure?.message.includes("timed out"));
});

Deno.test("kv_cache_overload: a stalled engine's failure names the cache and the streams left open", async () => {
  const report = await runConformanceReport(brokenEngine("OverloadStalled"), {
    stepTimeoutMs: 1000,
  });
  const message = report.failure?.message ?? "";
  ok(/against a KV cache of 1024 blocks of 16, context 4096/.test(message), message);
  ok(
    /after 1000 ms \d+ stream\(s\) had not ended \(2048-token prompt #\d+ of 8: no chunk yet/.test(
      message,
    ),
    message,
  );
  // The engine was given more than its cache holds and served the rest: the mock, which waits
  // its turn for room, ends every stream with a smaller cache too.
  const small = await runConformanceReport(() =>
    new MockEngine({ totalBlocks: 40, blockSize: 8, contextLength: 256 })
  );
  ok(small.passed, formatReport(small));
});
