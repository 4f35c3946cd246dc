import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { countJunit } from "./junit.ts";

Deno.test("countJunit counts passed, failed and skipped cases", () => {
  const xml = `<testsuites><testsuite name="a">
    <testcase name="ok" time="0.1"/>
    <testcase name="ok2" time="0.1"></testcase>
    <testcase name="bad"><failure message="x">boom</failure></testcase>
    <testcase name="err"><error message="y"/></testcase>
    <testcase name="skip"><skipped/></testcase>
  </testsuite></testsuites>`;
  assertEquals(countJunit(xml), { passed: 2, failed: 2, skipped: 1 });
});

Deno.test("countJunit reads an empty report as zero", () => {
  assertEquals(countJunit("<testsuites></testsuites>"), { passed: 0, failed: 0, skipped: 0 });
});
