/**
 * `deno task bench:gpu --quick` checks its plumbing on lavapipe: two runs on fortune (in place of
 * the shapes) each in a process of its own, their reports in one JSON with issue 25's goals read
 * from them (the GPU goals reported but not judged on a CPU adapter), and the chart beside it.
 */
import { ok, strictEqual as equal } from "node:assert/strict";

Deno.test("bench:gpu --quick: runs, reports, goals and chart on fortune", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const out = `${dir}/table.json`;
    const r = await new Deno.Command(Deno.execPath(), {
      args: [
        ...["run", "-A", new URL("./gpu_table.ts", import.meta.url).pathname, "--quick"],
        ...["--model", new URL("../../models/fortune", import.meta.url).pathname],
        ...["--only", "135m-f16,135m-quant", "--out", out],
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(r.stderr);
    equal(r.code, 0, stderr.slice(-2000));
    const table = JSON.parse(await Deno.readTextFile(out));
    equal(table.bench, "gpu-table");
    ok(/llvmpipe|lavapipe/i.test(table.adapter), table.adapter);
    equal(table.runs.length, 2);
    for (const run of table.runs) {
      ok(run.report && !run.error, `${run.name}: ${run.error}`);
      ok(run.args.includes("--quick") && run.args.includes("--model"), run.args.join(" "));
    }
    const [f16, quant] = table.runs;
    ok(f16.report.shapes[0].contexts.length === 2, "the contexts row");
    ok(quant.report.shapes[0].shape.endsWith("q8_0"), quant.report.shapes[0].shape);
    equal(table.goals.length, 8);
    const b1 = table.goals.find((g: { goal: string }) => g.goal === "135M f16 decode, batch 1");
    ok(b1.value > 0, JSON.stringify(b1));
    equal(b1.met, null, "a GPU goal is not judged on lavapipe");
    ok((await Deno.readTextFile(`${dir}/table.svg`)).startsWith("<svg"));
    ok(/goal 135M f16 decode, batch 1/.test(stderr), "the goals are printed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
