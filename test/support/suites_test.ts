/**
 * Tests of `npm test`'s runner: which deaths at exit are forgiven (only the known lavapipe
 * teardown crash, by its signal and its exact last stderr line), judged on fake suites, shell
 * processes that write a JUnit report and then die as told; and the summary's time lines.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { diedAfterReport, KNOWN_EXIT_CRASHES, lastLine, runSuite } from "./suite_process.ts";
import { duration, timeLines } from "./suites.ts";

const passed = { passed: 12, failed: 0, skipped: 0 };
const abort = { success: false, code: 134, signal: "SIGABRT" };
const CAUSE = "corrupted size vs. prev_size in fastbins";

Deno.test("the known teardown crash is listed as SIGABRT with glibc's heap message", () => {
  deepStrictEqual(KNOWN_EXIT_CRASHES, [{ signal: "SIGABRT", lastLine: CAUSE }]);
});

type Judge = typeof diedAfterReport;
type Status = Parameters<Judge>[0];

const segv = { success: false, code: 139, signal: "SIGSEGV" };
const none = { passed: 0, failed: 0, skipped: 3 };
/** [what, status, counts, reported, stderr, forgiven]. */
const CASES: readonly [string, Status, typeof passed, boolean, string, boolean][] = [
  ["the known signature", abort, passed, true, `ok\n${CAUSE}\n`, true],
  // Deno's shell-style code alone (no signal name) names the same signal.
  ["its code alone", { ...abort, signal: null }, passed, true, `${CAUSE}\n`, true],
  ["SIGABRT, no message", abort, passed, true, "", false],
  ["SIGABRT, another cause", abort, passed, true, "free(): invalid pointer\n", false],
  ["the message not last", abort, passed, true, `${CAUSE}\nmore\n`, false],
  ["the message not exact", abort, passed, true, `${CAUSE} (x)`, false],
  ["SIGSEGV", segv, passed, true, CAUSE, false],
  ["SIGSEGV, no message", segv, passed, true, "", false],
  ["SIGKILL", { success: false, code: 137, signal: "SIGKILL" }, passed, true, CAUSE, false],
  ["exit 1", { success: false, code: 1, signal: null }, passed, true, CAUSE, false],
  ["no whole report", abort, passed, false, CAUSE, false],
  ["a failed test", abort, { ...passed, failed: 1 }, true, CAUSE, false],
  ["nothing ran", abort, none, true, CAUSE, false],
  ["a success is no death", { success: true, code: 0, signal: null }, passed, true, CAUSE, false],
];

/** Which of `CASES` `judge` gets wrong. */
const misjudged = (judge: Judge) =>
  CASES.filter(([, st, counts, rep, err, want]) => judge(st, counts, rep, err) !== want)
    .map(([what]) => what);

Deno.test("a death at exit is forgiven only for the known signal and its exact last stderr line", () => {
  deepStrictEqual(misjudged(diedAfterReport), []);
});

Deno.test("planted: the old rule (any SIGABRT or SIGSEGV after a clean report) is rejected", () => {
  const old: Judge = (st, counts, reported) =>
    !st.success && reported && counts.failed === 0 && counts.passed > 0 &&
    ["SIGABRT", "SIGSEGV"].includes(st.signal ?? ({ 134: "SIGABRT", 139: "SIGSEGV" })[st.code]!);
  deepStrictEqual(misjudged(old), [
    "SIGABRT, no message",
    "SIGABRT, another cause",
    "the message not last",
    "the message not exact",
    "SIGSEGV",
    "SIGSEGV, no message",
  ]);
});

Deno.test("lastLine skips blank lines and colours", () => {
  strictEqual(lastLine(`a\n\x1b[31mb\x1b[0m \r\n\n`), "b");
  strictEqual(lastLine(""), "");
});

const REPORT = `<?xml version="1.0"?><testsuites><testsuite name="x">` +
  `<testcase name="a"/><testcase name="b"/></testsuite></testsuites>`;

/**
 * A fake suite: a shell that writes a JUnit report of two passed tests (unless `report` is
 * false), prints `stderr` on stderr, then runs `end` (`kill -ABRT $$`, `exit 0`).
 */
async function fake(stderr: string, end: string, report = true) {
  const dir = await Deno.makeTempDir({ prefix: "kiln-fake-suite-" });
  const junit = `${dir}/r.xml`;
  const script = [
    report ? `printf '%s' '${REPORT}' > "$1"` : ":",
    `printf '%s\\n' '${stderr}' >&2`,
    end,
  ].join("; ");
  const lines: string[] = [];
  const result = await runSuite(
    { label: "fake", argv: ["sh", "-c", script, "fake", junit], junit, minutes: 1, env: {} },
    (line) => lines.push(line),
  );
  await Deno.remove(dir, { recursive: true });
  return { result, lines };
}

Deno.test("a fake suite dying by the exact known signature after its report is forgiven", async () => {
  const { result, lines } = await fake(CAUSE, "kill -ABRT $$");
  deepStrictEqual(result.counts, { passed: 2, failed: 0, skipped: 0 });
  strictEqual(result.crashed, false);
  strictEqual(lines.includes(CAUSE), true, "its stderr is echoed");
  strictEqual(lines.some((l) => l.includes("teardown crash")), true, lines.join("\n"));
});

Deno.test("a fake suite dying by SIGABRT for another cause counts as failed", async () => {
  const { result } = await fake("free(): invalid pointer", "kill -ABRT $$");
  deepStrictEqual(result.counts, { passed: 2, failed: 1, skipped: 0 });
  strictEqual(result.crashed, true);
});

Deno.test("a fake suite dying by another signal with the known message counts as failed", async () => {
  for (const signal of ["SEGV", "KILL", "TERM"]) {
    const { result } = await fake(CAUSE, `kill -${signal} $$`);
    deepStrictEqual(result.counts, { passed: 2, failed: 1, skipped: 0 }, signal);
    strictEqual(result.crashed, true, signal);
  }
});

Deno.test("a fake suite dying by the known signature without a report counts as failed", async () => {
  const { result } = await fake(CAUSE, "kill -ABRT $$", false);
  deepStrictEqual(result.counts, { passed: 0, failed: 1, skipped: 0 });
  strictEqual(result.crashed, true);
});

Deno.test("a fake suite that ends well is counted from its report alone", async () => {
  const { result } = await fake("a warning", "exit 0");
  deepStrictEqual(result.counts, { passed: 2, failed: 0, skipped: 0 });
  strictEqual(result.crashed, false);
});

Deno.test("the summary lists each suite's time, then the wall time", () => {
  strictEqual(duration(42.4), "42s");
  strictEqual(duration(65), "1m 05s");
  const r = (label: string, seconds: number) => ({
    label,
    seconds,
    counts: { passed: 1, failed: 0, skipped: 0 },
    crashed: false,
  });
  deepStrictEqual(timeLines([r("gate", 100), r("deno (kernels)", 725)], 800), [
    "=== time per suite (suites in different lanes ran side by side)",
    "gate            1m 40s",
    "deno (kernels)  12m 05s",
    "total (wall)    13m 20s",
  ]);
});
