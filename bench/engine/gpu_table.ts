/**
 * `deno task bench:gpu`: the whole speed table in one command, sized for one 10-minute call on the
 * GPU machine. Runs `bench.ts` once per row group, each in a process of its own under what is left
 * of `--budget-s` (a run past it is stopped and recorded as timed out; the rest still report), then
 * writes every report, issue 25's goals read from them (`gpu_goals.ts`) and a chart of the goals
 * to `bench/results/gpu-table-<adapter>.json` and `.svg`.
 *
 *   deno task bench:gpu [--quick] [--model DIR] [--only RUN,...] [--budget-s 540] [--out FILE]
 *
 * Rows: SmolLM2-135M's shape at F16 (decode batch 1/8/32, prefill 512/2048, contexts 128 to its
 * 8k, with the read and FMA probes), at Q8_0 and Q4_K_M (decode), Llama-3.2-1B's shape at F16
 * (the bandwidth row), Qwen2.5-0.5B's at Q4_K_M, and the peers of `bench/peers/` where their
 * packages are installed (`tools/peers/`) (llama.cpp's builds through node-llama-cpp), and speculative decoding off
 * and on (`speculative.ts`, the 135M shape at k = 4 and 8). `--quick` (plumbing, on lavapipe) keeps every run tiny, and
 * `--model DIR` runs a folder (fortune, say) in place of every shape.
 *
 * On the GPU machine nothing is installed: the call carries `.gpu-carry` (see
 * ../shared/device/README.md) and the npm packages `bench.ts` imports, and runs this file with the
 * carried `deno` (`bash bench/gpu_carry.sh` prints the `carry` list and the command).
 */
import { existsSync } from "node:fs";
import { runCli } from "../../src/adapters/deno/flags.ts";
import { evaluateGoals, renderGoals, type TableRun } from "./gpu_goals.ts";
import { adapterSlug } from "../lib/adapter_slug.ts";

const { flags, fail } = runCli({
  name: "bench:gpu",
  command: "deno task bench:gpu",
  about: "Every row of the speed table (bench.ts runs) within one time budget, and issue 25's " +
    "goals read from them; JSON and an SVG in bench/results/.",
  flags: {
    quick: { type: "boolean", help: "tiny runs (checks the plumbing on a CPU adapter)" },
    model: { type: "string", arg: "DIR", help: "run this folder in place of every shape" },
    only: { type: "list", arg: "RUN,...", help: "only these runs (by name)" },
    "budget-s": { type: "integer", min: 10, default: 540, help: "seconds for every run together" },
    out: { type: "string", arg: "FILE", help: "the JSON (default bench/results/gpu-table-...)" },
  },
});
const quick = flags.quick;
const model = flags.model;

/**
 * Each run's `bench.ts` flags; `shape` is replaced by `--model DIR` when one is given. A run with
 * a `script` runs that file with its own flags alone.
 */
function plan(): { name: string; shape: string; args: string[]; script?: string }[] {
  const contexts = quick ? "32,128" : "128,2048,8192";
  const runs = [
    {
      name: "135m-f16",
      shape: "smollm2-135m",
      args: quick ? ["--contexts", contexts] : [
        "--batches",
        "1,8,32",
        "--prefill",
        "512,2048",
        "--contexts",
        contexts,
        "--tokens",
        "64",
      ],
    },
    {
      name: "135m-quant",
      shape: "smollm2-135m",
      args: [
        ...["--quant", quick ? "q8_0" : "q8_0,q4_k_m", "--quant-only", "--decode-only"],
        ...(quick ? [] : ["--batches", "1,32", "--tokens", "64"]),
      ],
    },
    {
      name: "1b-f16",
      shape: "llama-3.2-1b",
      args: quick ? ["--decode-only"] : ["--batches", "1,32", "--prefill", "512", "--tokens", "64"],
    },
    {
      name: "0.5b-q4km",
      shape: "qwen2.5-0.5b",
      args: [
        ...["--quant", "q4_k_m", "--quant-only"],
        ...(quick
          ? ["--decode-only"]
          : ["--batches", "1,8,32", "--prefill", "512", "--tokens", "64"]),
      ],
    },
    {
      name: "spec",
      shape: "smollm2-135m",
      script: "speculative.ts",
      args: quick ? ["--quick", "--tokens", "16"] : ["--models", "smollm2-135m", "--k", "4,8"],
    },
    {
      name: "peers",
      shape: "smollm2-135m",
      args: [
        ...["--peers", "--quant", "q4_k_m", "--quant-only", "--decode-only"],
        ...(quick ? [] : ["--batches", "1,8", "--tokens", "64"]),
      ],
    },
  ];
  const known = runs.map((r) => r.name);
  const unknown = flags.only?.find((n) => !known.includes(n));
  if (unknown !== undefined) fail(`--only: no run ${unknown} (${known.join(", ")})`);
  return runs.filter((r) => !flags.only || flags.only.includes(r.name));
}

/** One `bench.ts` (or `script`) run in its own process, stopped after `seconds`. */
async function runBench(
  name: string,
  args: string[],
  seconds: number,
  script = "bench.ts",
): Promise<TableRun> {
  const out = await Deno.makeTempFile({ prefix: `kiln-gpu-${name}-`, suffix: ".json" });
  const t0 = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(`./${script}`, import.meta.url).pathname, ...args, "--out", out],
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, seconds * 1000);
  const status = await child.status;
  clearTimeout(timer);
  const elapsed = (performance.now() - t0) / 1000;
  try {
    const run: TableRun = { name, args, seconds: elapsed };
    if (timedOut) return { ...run, error: `stopped after ${seconds.toFixed(0)} s (the budget)` };
    if (!status.success) return { ...run, error: `${script} exited with ${status.code}` };
    const report = JSON.parse(await Deno.readTextFile(out));
    return report.bench === "speculative" ? { ...run, spec: report } : { ...run, report };
  } finally {
    await Deno.remove(out).catch(() => {});
    await Deno.remove(out.replace(/\.json$/, ".svg")).catch(() => {});
  }
}

const started = performance.now();
const left = () => flags["budget-s"] - (performance.now() - started) / 1000;
const runs: TableRun[] = [];
const peersInstalled = existsSync(new URL("../../tools/peers/node_modules", import.meta.url));
for (const r of plan()) {
  const args = r.script ? r.args : [
    ...(model ? ["--model", model] : ["--shapes", r.shape]),
    ...(quick ? ["--quick"] : []),
    ...r.args,
  ];
  if (r.name === "peers" && !peersInstalled) {
    runs.push({ name: r.name, args, seconds: 0, error: "tools/peers/ has no node_modules here" });
    continue;
  }
  if (left() < 5) {
    runs.push({ name: r.name, args, seconds: 0, error: "not started: the budget was spent" });
    continue;
  }
  console.error(`\n== bench:gpu ${r.name}: ${args.join(" ")} (${left().toFixed(0)} s left)`);
  runs.push(await runBench(r.name, args, left(), r.script));
}

const adapter = runs.find((r) => r.report)?.report?.adapter ?? "unknown adapter";
const onGpu = !/llvmpipe|lavapipe|swiftshader/i.test(adapter);
const goals = evaluateGoals(runs, onGpu);
const out = flags.out ??
  new URL(`../results/gpu-table-${adapterSlug(adapter)}.json`, import.meta.url).pathname;
const table = {
  bench: "gpu-table",
  adapter,
  date: new Date().toISOString(),
  quick,
  ...(model ? { model } : {}),
  budget_s: flags["budget-s"],
  seconds: (performance.now() - started) / 1000,
  goals,
  runs,
};
await Deno.writeTextFile(out, JSON.stringify(table, null, 2) + "\n");
await Deno.writeTextFile(out.replace(/\.json$/, "") + ".svg", renderGoals(adapter, goals));
console.error(`\nbench:gpu on ${adapter} in ${table.seconds.toFixed(0)} s`);
for (const r of runs) {
  console.error(`  ${r.name}: ${r.error ?? "ok"} (${r.seconds.toFixed(0)} s)`);
}
for (const g of goals) {
  const v = g.value === null ? g.note : `${g.value.toPrecision(3)} ${g.unit} (${g.note})`;
  const verdict = g.met === null ? "" : g.met ? " MET" : " not met";
  console.error(`  goal ${g.goal} ≥ ${g.target}: ${v}${verdict}`);
}
console.error(`wrote ${out}`);
