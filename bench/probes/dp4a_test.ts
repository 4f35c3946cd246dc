/**
 * `bench/probes/dp4a.ts --quick` end to end (its plumbing on lavapipe): the three products checked
 * against float64 inside the run, and one row of times and ratios in the JSON.
 */
import { ok, strictEqual as equal } from "node:assert/strict";

Deno.test("bench/probes/dp4a.ts --quick: every product within its bound, a row of times", async () => {
  const dir = await Deno.makeTempDir({ prefix: "kiln-bench-dp4a-" });
  try {
    const out = `${dir}/dp4a.json`;
    const run = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL("./dp4a.ts", import.meta.url).pathname, "--quick", "--out", out],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(run.stderr);
    equal(run.code, 0, stderr);
    const report = JSON.parse(await Deno.readTextFile(out));
    equal(report.bench, "dp4a");
    equal(report.results.length, 1);
    const r = report.results[0];
    for (const what of ["dp4a", "floats", "kiln"]) {
      ok(r[`${what}_us`] > 0, what);
      ok(r[`worst_error_of_bound_${what}`] <= 1, what);
    }
    ok(
      Math.abs(r.dp4a_with_quantize_over_floats - (r.dp4a_us + r.quantize_us) / r.floats_us) < 1e-9,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
