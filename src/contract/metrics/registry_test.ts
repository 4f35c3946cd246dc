import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../errors.ts";
import { negotiate, render } from "./exposition.ts";
import { Registry } from "./registry.ts";
import { promtoolCheck } from "../../../test/support/promtool.ts";
import { parseFamilies } from "../../../test/support/scrape.ts";

function sample(): Registry {
  const r = new Registry();
  const c = r.counter({ name: "kiln_requests_total", help: "Requests.", labelNames: ["status"] });
  c.inc(3, { status: "ok" });
  c.inc(1, { status: "error" });
  const g = r.gauge({
    name: "kiln_weird",
    help: 'Help with a backslash \\ and a newline\nand "quotes".',
    labelNames: ["path"],
    constLabels: { instance: "a" },
  });
  g.set(1.5, { path: 'C:\\dir\\"x"\nnext' });
  g.set(-Infinity, { path: '} evil="1' });
  const h = r.histogram({ name: "kiln_latency_seconds", help: "Latency.", buckets: [0.1, 0.5, 1] });
  for (const v of [0.05, 0.1, 0.3, 0.7, 2, 5]) h.observe(v);
  return r;
}

Deno.test("Prometheus text passes promtool and parses back to the values written", async () => {
  const text = render([sample()], "prometheus");
  const check = await promtoolCheck(text);
  ok(check.ok, check.output + "\n" + text);
  const families = parseFamilies(text);
  const byName = new Map(families.map((f) => [f.name, f]));
  const requests = byName.get("kiln_requests_total")!;
  equal(requests.type, "COUNTER");
  deepStrictEqual(
    requests.metrics.map((m) => [m.labels?.status, Number(m.value)]),
    [["ok", 3], ["error", 1]],
  );
  const weird = byName.get("kiln_weird")!;
  equal(weird.help, 'Help with a backslash \\ and a newline\nand "quotes".');
  equal(weird.metrics[0]!.labels!.path, 'C:\\dir\\"x"\nnext');
  equal(weird.metrics[0]!.labels!.instance, "a");
  equal(weird.metrics[1]!.labels!.path, '} evil="1');
  equal(weird.metrics[1]!.value, "-Inf");
  const hist = byName.get("kiln_latency_seconds")!;
  equal(hist.type, "HISTOGRAM");
  deepStrictEqual(hist.metrics[0]!.buckets, { "0.1": "2", "0.5": "3", "1": "4", "+Inf": "6" });
  equal(Number(hist.metrics[0]!.sum), 0.05 + 0.1 + 0.3 + 0.7 + 2 + 5);
  equal(hist.metrics[0]!.count, "6");
});

Deno.test("one HELP and TYPE per family; a label value cannot inject a series", () => {
  const text = render([sample()], "prometheus");
  const lines = text.trimEnd().split("\n");
  equal(lines.filter((l) => l.startsWith("# TYPE kiln_requests_total ")).length, 1);
  equal(lines.filter((l) => l.startsWith("# HELP kiln_weird ")).length, 1);
  // Each series is one line: the newline inside the label value was escaped.
  equal(lines.filter((l) => l.startsWith("kiln_weird{")).length, 2);
  ok(!lines.some((l) => l.startsWith("next")));
});

// promtool reads only the 0.0.4 text format (it rejects OpenMetrics' escaped quotes in HELP),
// so the OpenMetrics rendering is checked against the spec's rules directly.
Deno.test("OpenMetrics rendering: counter family without _total, samples with it, # EOF", () => {
  const text = render([sample()], "openmetrics");
  ok(text.endsWith("# EOF\n"));
  equal(text.indexOf("# EOF"), text.length - "# EOF\n".length, "# EOF only at the end");
  ok(text.includes("# TYPE kiln_requests counter\n"));
  ok(text.includes('kiln_requests_total{status="ok"} 3\n'));
  ok(text.includes('kiln_latency_seconds_bucket{le="+Inf"} 6\n'));
  ok(
    text.includes(
      '# HELP kiln_weird Help with a backslash \\\\ and a newline\\nand \\"quotes\\".\n',
    ),
  );
  // The same samples as the Prometheus rendering, less the TYPE/HELP naming and the EOF marker.
  const samples = (t: string) => t.split("\n").filter((l) => l && !l.startsWith("#"));
  deepStrictEqual(samples(text), samples(render([sample()], "prometheus")));
});

Deno.test("negotiate picks OpenMetrics only when the Accept header asks for it", () => {
  equal(negotiate(null).format, "prometheus");
  equal(negotiate("text/plain").contentType, "text/plain; version=0.0.4; charset=utf-8");
  const om = negotiate("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5");
  equal(om.format, "openmetrics");
  equal(om.contentType, "application/openmetrics-text; version=1.0.0; charset=utf-8");
  equal(negotiate("application/openmetrics-text;q=0").format, "prometheus");
});

function rejected(fn: () => unknown, text: string): void {
  throws(
    fn,
    (e: unknown) =>
      e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(text),
  );
}

Deno.test("names that break the format are rejected when registered", () => {
  const r = new Registry();
  rejected(() => r.gauge({ name: "bad-name", help: "" }), "invalid metric name");
  rejected(() => r.gauge({ name: "1abc", help: "" }), "invalid metric name");
  rejected(
    () => r.gauge({ name: "ok", help: "", labelNames: ["bad-label"] }),
    "invalid label name",
  );
  rejected(
    () => r.gauge({ name: "ok2", help: "", labelNames: ["__reserved"] }),
    "invalid label name",
  );
  rejected(
    () => r.gauge({ name: "ok3", help: "", constLabels: { "a b": "x" } }),
    "invalid label name",
  );
  rejected(
    () => r.gauge({ name: "ok4", help: "", labelNames: ["x"], constLabels: { x: "1" } }),
    "duplicate",
  );
  rejected(
    () => r.histogram({ name: "h", help: "", labelNames: ["le"], buckets: [1] }),
    "reserved",
  );
  rejected(() => r.histogram({ name: "h2", help: "", buckets: [2, 1] }), "strictly increasing");
  r.counter({ name: "dup", help: "" });
  rejected(() => r.gauge({ name: "dup_total", help: "" }), "already registered");
  r.histogram({ name: "lat", help: "", buckets: [1] });
  rejected(() => r.gauge({ name: "lat_count", help: "" }), "already registered");
  const c = r.counter({ name: "c", help: "", labelNames: ["a"] });
  rejected(() => c.inc(1, { b: "x" }), "expected labels");
  rejected(() => c.inc(-1, { a: "x" }), "only go up");
});

Deno.test("foreign exposition text from a callback is appended", async () => {
  const r = sample();
  r.addExpfmtCallback(() =>
    "# HELP foreign_metric From elsewhere.\n# TYPE foreign_metric gauge\nforeign_metric 7"
  );
  const text = render([r], "prometheus");
  ok(text.includes("foreign_metric 7\n"));
  const check = await promtoolCheck(text);
  ok(check.ok, check.output);
});
