/**
 * `deno task bench:spec --quick` end to end on fortune (the plumbing on lavapipe): each
 * workload's row with speculation off and on (prompt lookup, and the Q2_K draft model), its
 * tokens identical, drafts accepted on the repetitive ones, and the chart drawn beside the JSON.
 */
import { ok, strictEqual as equal } from "node:assert/strict";

Deno.test("bench:spec --quick: rows off and on, identical tokens, a chart", async () => {
  const dir = await Deno.makeTempDir({ prefix: "kiln-bench-spec-" });
  try {
    const out = `${dir}/spec.json`;
    const run = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("./speculative.ts", import.meta.url).pathname,
        "--quick",
        "--tokens",
        "16",
        "--out",
        out,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(run.stderr);
    equal(run.code, 0, stderr);
    const report = JSON.parse(await Deno.readTextFile(out));
    equal(report.bench, "speculative");
    // Three workloads by prompt lookup, then by the Q2_K draft model.
    equal(report.results.length, 6);
    for (const [i, r] of report.results.entries()) {
      equal(r.model, "fortune");
      equal(r.method, i < 3 ? "ngram" : "draft_model");
      equal(r.identical, true, r.workload);
      ok(r.off_tokens_per_s > 0 && r.on_tokens_per_s > 0, r.workload);
      ok(Math.abs(r.speedup - r.on_tokens_per_s / r.off_tokens_per_s) < 1e-9);
    }
    const repetitive = report.results.filter((r: { workload: string }) =>
      r.workload.startsWith("repetitive")
    );
    ok(repetitive.every((r: { acceptance: number }) => r.acceptance > 0.5), stderr);
    const svg = await Deno.readTextFile(`${dir}/spec.svg`);
    ok(svg.includes("speculative decoding") && svg.includes("repetitive, greedy, 4 streams"));
    ok(svg.includes("draft Q2_K.gguf k=4"), "the draft model's rows drawn");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
