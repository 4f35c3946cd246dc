/** The conformance kit against the mock engine, in the browser. */
import { formatReport, runConformanceReport } from "../../../src/conformance/mod.ts";
import { MockEngine } from "../../../src/engines/mock/mod.ts";
import { runChecks } from "./report.ts";

const report = await runConformanceReport(() => new MockEngine());
await runChecks([
  ...report.checks.map((c) =>
    [`conformance(mock): ${c.name}`, () => {
      if (!c.passed) throw new Error(c.message ?? "failed");
      return Promise.resolve(`${c.ms.toFixed(1)} ms`);
    }] as const
  ),
  ["conformance(mock): report", () => {
    if (!report.passed) throw new Error(formatReport(report));
    return Promise.resolve();
  }],
]);
