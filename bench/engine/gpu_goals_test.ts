/**
 * `gpu_goals.ts`: issue 25's goals read from a table's runs. Values come from the right run and
 * row; a GPU goal is judged only on a GPU; a missing run, a failed one or a row not measured
 * gives a value of null and says why; the chart draws every goal.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { evaluateGoals, H100_READ_GB_PER_S, renderGoals, type TableRun } from "./gpu_goals.ts";
import type { BenchReport, ShapeResult } from "./report.ts";

const report = (shape: Partial<ShapeResult>): BenchReport => ({
  bench: "kiln-bench",
  adapter: "test",
  date: "",
  runtime_data: {},
  deno: "",
  options: {},
  probe: { bytes: 1, dispatches: 1, seconds_per_dispatch: 1, gb_per_s: 1, timer: "wall" },
  shapes: [{ shape: "s", model_dir: "", skipped: [], ...shape }],
});
const prefill = (prompt_tokens: number, fraction_of_fma: number) => ({
  prompt_tokens,
  ttft_s: 1,
  tokens_per_s: 40000,
  runs: 1,
  ttft_s_all: [1],
  gflop_per_s: 1,
  fraction_of_fma,
});
const context = (context: number, ratio_to_shortest: number) => ({
  context,
  prompt_tokens: context,
  timed_tokens: 1,
  seconds: 1,
  tokens_per_s: 1,
  ratio_to_shortest,
  ttft_s: 1,
});
const decode = (batch: number, tokens_per_s: number) => ({
  batch,
  tokens_per_stream: 1,
  timed_tokens: 1,
  seconds: 1,
  tokens_per_s,
  max_steps_in_flight: 1,
});

const RUNS: TableRun[] = [
  {
    name: "135m-f16",
    args: [],
    seconds: 1,
    report: report({
      decode: [decode(1, 1200), decode(32, 9000)],
      prefill: [prefill(16, 0.9), prefill(512, 0.4)],
      contexts: [context(128, 1), context(8192, 0.7)],
    }),
  },
  { name: "1b-f16", args: [], seconds: 1, error: "bench.ts exited with 1" },
];

Deno.test("goals: values from their runs; GPU goals judged only on a GPU; gaps say why", () => {
  const byName = (onGpu: boolean) =>
    Object.fromEntries(evaluateGoals(RUNS, onGpu).map((g) => [g.goal, g]));
  const gpu = byName(true), cpu = byName(false);
  equal(gpu["135M f16 decode, batch 1"]!.value, 1200);
  equal(gpu["135M f16 decode, batch 1"]!.met, true);
  equal(cpu["135M f16 decode, batch 1"]!.met, null, "a GPU goal is not judged on lavapipe");
  equal(gpu["135M f16 decode, batch 32"]!.met, false);
  equal(gpu["135M f16 prefill 512"]!.value, 40000);
  // The 512-token prefill, not the 16-token one.
  equal(cpu["prefill 512 GEMM vs FMA probe (135M f16)"]!.value, 0.4);
  equal(cpu["prefill 512 GEMM vs FMA probe (135M f16)"]!.met, false);
  equal(cpu["decode at 8k context vs at 128 (135M)"]!.value, 0.7);
  equal(cpu["decode at 8k context vs at 128 (135M)"]!.met, true);
  const bw = gpu["1B f16 decode weight reads, of 2.77 TB/s"]!;
  deepStrictEqual([bw.value, bw.met], [null, null]);
  ok(/run 1b-f16: bench.ts exited with 1/.test(bw.note), bw.note);
  ok(/not in this table/.test(gpu["prefill 512 Q4_K_M vs llama.cpp Vulkan"]!.note));
  ok(
    /run spec not in this table/.test(gpu["speculative (prompt lookup), repetitive prompt"]!.note),
  );
});

Deno.test("goals: short contexts or prefills are not judged against the long-context goals", () => {
  const runs: TableRun[] = [{
    name: "135m-f16",
    args: [],
    seconds: 1,
    report: report({ prefill: [prefill(16, 0.9)], contexts: [context(32, 1), context(128, 1.2)] }),
  }];
  const goals = Object.fromEntries(evaluateGoals(runs, false).map((g) => [g.goal, g]));
  equal(goals["decode at 8k context vs at 128 (135M)"]!.value, null);
  equal(goals["prefill 512 GEMM vs FMA probe (135M f16)"]!.value, null);
});

Deno.test("goals: the 1B row's bandwidth is a fraction of the H100's read figure", () => {
  const runs: TableRun[] = [{
    name: "1b-f16",
    args: [],
    seconds: 1,
    report: report({
      weight_reads: {
        bytes_per_step: 1,
        step_seconds: 1,
        gb_per_s: 1662,
        probe_gb_per_s: 2000,
        ratio_to_probe: 0.831,
      },
    }),
  }];
  const g = evaluateGoals(runs, true).find((g) => g.goal.startsWith("1B"))!;
  equal(g.value, 1662 / H100_READ_GB_PER_S);
  equal(g.met, true);
  const svg = renderGoals("NVIDIA H100", evaluateGoals(runs, true));
  ok(svg.startsWith("<svg") && svg.includes("NVIDIA H100"));
  equal(
    (svg.match(/<text x="10" y="\d+">/g) ?? []).length,
    8,
    "a label per goal",
  );
});

Deno.test("goals: speculative decoding's from the one-stream repetitive greedy row of bench:spec", () => {
  const row = (workload: string, streams: number, speedup: number, identical = true) => ({
    model: "smollm2-135m",
    workload,
    k: 4,
    streams,
    speedup,
    identical,
    acceptance: 0.97,
  });
  const spec = (results: ReturnType<typeof row>[]): TableRun => ({
    name: "spec",
    args: [],
    seconds: 1,
    spec: { bench: "speculative", adapter: "test", results },
  });
  const goal = (r: TableRun) =>
    evaluateGoals([r], false).find((g) => g.goal.startsWith("speculative"))!;
  const good = goal(spec([
    row("repetitive, greedy, 4 streams", 4, 1.5),
    row("repetitive, greedy", 1, 2.07),
    row("free text, sampled (T=1)", 1, 0.9),
  ]));
  deepStrictEqual([good.value, good.met], [2.07, true]);
  ok(/k=4, 97 % of drafts accepted/.test(good.note), good.note);
  const differ = goal(spec([row("repetitive, greedy", 1, 3, false)]));
  deepStrictEqual([differ.value, differ.met], [null, null]);
  ok(/tokens differ/.test(differ.note), differ.note);
  ok(/exited/.test(goal({ name: "spec", args: [], seconds: 1, error: "exited with 1" }).note));
});
