import { equal } from "node:assert/strict";
import { diedAfterReport } from "./suites.ts";

const passed = { passed: 12, failed: 0, skipped: 0 };
const abort = { success: false, code: 134, signal: null };

Deno.test("a crash at exit counts as a test only when the report is missing, empty or failed", () => {
  equal(diedAfterReport(abort, passed, true), true);
  equal(diedAfterReport({ success: false, code: 139, signal: "SIGSEGV" }, passed, true), true);
  equal(diedAfterReport(abort, passed, false), false, "no whole report");
  equal(diedAfterReport(abort, { ...passed, failed: 1 }, true), false, "a failed test");
  equal(diedAfterReport(abort, { passed: 0, failed: 0, skipped: 3 }, true), false, "nothing ran");
  equal(diedAfterReport({ success: false, code: 1, signal: null }, passed, true), false, "exit 1");
  equal(diedAfterReport({ success: false, code: 137, signal: "SIGKILL" }, passed, true), false);
  equal(diedAfterReport({ success: true, code: 0, signal: null }, passed, true), false);
});
