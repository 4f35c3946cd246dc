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

Deno.test("countJunit reads Node's report: `>` unescaped in attributes, subtests as suites", () => {
  const xml = `<?xml version="1.0" encoding="utf-8"?>
<testsuites>
	<testcase name="n1 > x" time="0.01" classname="test"/>
	<testcase name="n2" time="0.0" classname="test">
		<skipped type="skipped" message="true"/>
	</testcase>
	<testsuite name="n3" time="0.006" tests="1">
		<testcase name="sub" time="0.0005" classname="test"/>
	</testsuite>
	<testcase name="n4 fails" time="0.0005" classname="test" failure="x > y">
		<failure type="testCodeFailure" message="x > y">at TestContext.&lt;anonymous> (b.test.mjs:3:32)</failure>
	</testcase>
	<testcase name="n5 > ok" time="0.01" classname="test"/>
	<!-- tests 5 -->
</testsuites>`;
  assertEquals(countJunit(xml), { passed: 3, failed: 1, skipped: 1 });
});

Deno.test("countJunit reads Deno's report: steps listed beside their test, ignored as skipped", () => {
  const xml = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="deno test" tests="5" failures="2" errors="0" time="0.071">
    <testsuite name="./a_test.ts" tests="5" disabled="1" errors="0" failures="2">
        <testcase name="outer &gt; with steps" classname="./a_test.ts" time="0.021" line="1" col="6">
            <failure message="1 test step failed">1 test step failed.</failure>
        </testcase>
        <testcase name="ign" classname="./a_test.ts" time="0.000" line="2" col="6">
            <skipped/>
        </testcase>
        <testcase name="plain" classname="./a_test.ts" time="0.000" line="3" col="6">
        </testcase>
        <testcase name="outer &gt; with steps &gt; s1" classname="./a_test.ts" time="0.001">
        </testcase>
        <testcase name="outer &gt; with steps &gt; s2" classname="./a_test.ts" time="0.001">
            <failure message="Uncaught Error: a &gt; b">Error: a &gt; b</failure>
        </testcase>
    </testsuite>
</testsuites>`;
  assertEquals(countJunit(xml), { passed: 2, failed: 2, skipped: 1 });
});
