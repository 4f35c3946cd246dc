/**
 * Runs the test suites as subprocesses, in lanes side by side (test/support/suite_process.ts
 * runs and judges each), counts their JUnit results and prints each suite's time.
 */
import type { Counts } from "./junit.ts";
import { runSuite, type SuiteResult, type SuiteRun } from "./suite_process.ts";

/** What `npm test -- NAME...` can name: the gate and each suite. */
export const SUITE_NAMES = ["gate", "deno", "node", "browser", "browser_big"] as const;

interface Suite {
  name: Exclude<typeof SUITE_NAMES[number], "gate">;
  /** The part of the suite this process runs, when the suite runs in several (`deno`). */
  part?: string;
  /** Present when the suite has anything to run. */
  command(junit: string): string[] | undefined;
  /** Minutes it may run before it is stopped and counted as one failure (a hung test). */
  minutes: number;
  /** Suites of one lane run one after another; the lanes run side by side (see `LANES`). */
  lane: number;
}

/** The gate's steps; each counts as one test, so a failed gate still ends with the count line. */
const GATE: readonly [string, string[]][] = [
  ["fmt --check", ["fmt", "--check"]],
  ["lint", ["lint"]],
  ["typecheck (deno, dom, webworker)", ["run", "-A", "scripts/typecheck.ts"]],
  ["jsr (publish --dry-run, doc --lint)", ["run", "-A", "scripts/jsr_check.ts"]],
];

async function runGate(): Promise<Counts> {
  const counts: Counts = { passed: 0, failed: 0, skipped: 0 };
  for (const [name, args] of GATE) {
    console.log(`\n=== gate: deno ${args.join(" ")}`);
    const { success } = await new Deno.Command(Deno.execPath(), { args }).spawn().status;
    console.log(`=== gate ${name}: ${success ? "ok" : "FAILED"}`);
    if (success) counts.passed++;
    else counts.failed++;
  }
  return counts;
}

async function hasFiles(dir: string, suffix: string): Promise<boolean> {
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isFile && entry.name.endsWith(suffix)) return true;
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return false;
}

const nodeTests = async (dir: string) =>
  (await hasFiles(dir, ".test.mjs"))
    ? (junit: string) => [
      "node",
      "--test",
      "--test-reporter=spec",
      "--test-reporter-destination=stdout",
      "--test-reporter=junit",
      `--test-reporter-destination=${junit}`,
      `${dir}/`,
    ]
    : () => undefined;

/**
 * The benchmark's own tests (`bench/{engine,kernels,probes,lib}/*_test.ts`). Not `bench/peers/`
 * nor `tools/`: they import packages installed apart (`tools/peers/`, see its README), so they
 * are tested by hand after that.
 */
const benchTests = () =>
  testFiles(["bench/engine/", "bench/kernels/", "bench/probes/", "bench/lib/"], []);

/**
 * The Deno suite's parts, each `deno test` process of its own. In one process the GPU tests slow
 * down the longer it runs on lavapipe (the whole of `src/gpu/kernels/gemm_quant_test.ts` took
 * 54 s alone and 20 minutes as the 85th file, matvec_quant 20 s and 163 s; CPU-only files kept
 * their speed), so the kernel tests, the model tests and the engines each run in a fresh
 * process, apart from the server and browser-side tests (the rest).
 */
// The watchdogs (`minutes`) leave room for the lanes' contention: side by side on 2 cores the
// kernels took 23 and the models 22 minutes, and with browser_big beside them both passed 25.
const DENO_PARTS: readonly { part: string; paths: string[]; minutes: number; lane: number }[] = [
  { part: "kernels", paths: ["src/gpu/"], minutes: 40, lane: 0 },
  {
    part: "models",
    paths: [
      "src/model/",
      "src/formats/",
      "src/runtime/",
      "src/reference/",
      "src/convert/",
      "src/text/gguf/",
    ],
    minutes: 40,
    lane: 1,
  },
  {
    part: "engines",
    paths: ["src/engines/", "src/adapters/", "src/conformance/"],
    minutes: 25,
    lane: 0,
  },
];

/**
 * The lanes. The suites share nothing (each its own processes, ports, temporary folders and
 * model store; browser_big alone writes .cache/big-model/), so the lanes run side by side, three
 * at a time on two cores: much of a suite's time is waiting (servers, sockets, pages, each
 * browser test file's Vite server) rather than computing. Lane 0: the kernels, the engines, then
 * browser_big; lane 1: the models, the rest of Deno, then Node; lane 2: the browser suite. In a
 * fresh-clone `.ci/run` on a 2-core machine they took 23 + 10.5 + 7.5, 22 + 10.5 + 0.3 and 16
 * minutes side by side (42 in all). browser_big in lane 2 instead, beside the kernels and the
 * models, slowed both past 25 minutes: it stays after the engines.
 */
const LANE = { denoRest: 1, node: 1, browser: 2, browserBig: 0 } as const;

/**
 * Every `*_test.ts` under `roots`, sorted, but those in folders under `skip` (prefixes; a root's
 * own files are always listed).
 */
async function testFiles(roots: string[], skip: string[]): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for await (const e of Deno.readDir(dir)) {
      const path = `${dir}${e.name}`;
      if (e.isDirectory) {
        if (!skip.some((s) => `${path}/`.startsWith(s))) await walk(`${path}/`);
      } else if (e.isFile && e.name.endsWith("_test.ts")) out.push(path);
    }
  };
  for (const root of roots) await walk(root);
  return out.sort();
}

async function suites(): Promise<Suite[]> {
  const bench = await benchTests();
  const deno = (paths: string[]) => (junit: string) => [
    Deno.execPath(),
    "test",
    "-A",
    `--junit-path=${junit}`,
    ...paths,
  ];
  // The rest is listed file by file: with `--ignore` (Deno 2.9) `deno test src/ test/` counted
  // more tests than those folders hold without the ignored parts, as if deno.json's
  // `test.exclude` no longer applied.
  const config = JSON.parse(await Deno.readTextFile("deno.json"));
  const excluded: string[] = config.test?.exclude ?? [];
  const rest = await testFiles(["src/", "test/"], [
    ...DENO_PARTS.flatMap((p) => p.paths),
    ...excluded,
  ]);
  return [
    ...DENO_PARTS.map((p): Suite => ({
      name: "deno",
      part: p.part,
      command: deno(p.paths),
      minutes: p.minutes,
      lane: p.lane,
    })),
    {
      name: "deno",
      part: "rest",
      command: deno([...rest, ...bench]),
      minutes: 30,
      lane: LANE.denoRest,
    },
    { name: "node", command: await nodeTests("test/node"), minutes: 10, lane: LANE.node },
    {
      name: "browser",
      command: await nodeTests("test/browser"),
      minutes: 30,
      lane: LANE.browser,
    },
    // A 2 GB model in Chromium (its file is generated once into .cache/big-model/): slower, last.
    {
      name: "browser_big",
      command: await nodeTests("test/browser_big"),
      minutes: 30,
      lane: LANE.browserBig,
    },
  ];
}

function env(): Record<string, string> {
  // The model store's directory (`serve --model https://…` caches there): a fresh one per run,
  // so that tests never read or fill the user's cache, nor one another's from an earlier run.
  const out: Record<string, string> = {
    KILN_CACHE_DIR: Deno.makeTempDirSync({ prefix: "kiln-test-cache-" }),
    // glibc's fatal messages (a heap check's abort) on stderr rather than the terminal, where the
    // runner reads the last line to tell the known teardown crash from any other.
    LIBC_FATAL_STDERR_: "1",
  };
  if (!Deno.env.get("XDG_RUNTIME_DIR")) {
    const dir = `${Deno.env.get("TMPDIR") ?? "/tmp"}/kiln-xdg-${Deno.pid}`;
    Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
    out.XDG_RUNTIME_DIR = dir;
  }
  return out;
}

/** `1m 05s`, `42s`. */
export function duration(seconds: number): string {
  const s = Math.round(seconds);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
}

/** The summary's lines before the count line: each suite's time, then the whole run's. */
export function timeLines(results: readonly SuiteResult[], wallSeconds: number): string[] {
  const width = Math.max(...results.map((r) => r.label.length), "total (wall)".length);
  return [
    "=== time per suite (suites in different lanes ran side by side)",
    ...results.map((r) => `${r.label.padEnd(width)}  ${duration(r.seconds)}`),
    `${"total (wall)".padEnd(width)}  ${duration(wallSeconds)}`,
  ];
}

/** Run the named suites (all when `only` is empty); returns the process exit code. */
export async function runSuites(only: string[]): Promise<number> {
  const started = performance.now();
  const dir = await Deno.makeTempDir({ prefix: "kiln-test-" });
  const total: Counts = { passed: 0, failed: 0, skipped: 0 };
  const results: SuiteResult[] = [];
  const extraEnv = env();
  if (only.length === 0 || only.includes("gate")) {
    const t0 = performance.now();
    const gate = await runGate();
    total.passed += gate.passed;
    total.failed += gate.failed;
    results.push({
      label: "gate",
      counts: gate,
      seconds: (performance.now() - t0) / 1000,
      crashed: false,
    });
  }
  const runs = new Map<number, SuiteRun[]>();
  for (const suite of await suites()) {
    if (only.length > 0 && !only.includes(suite.name)) continue;
    const label = suite.part === undefined ? suite.name : `${suite.name} (${suite.part})`;
    const junit = `${dir}/${suite.name}${suite.part === undefined ? "" : `_${suite.part}`}.xml`;
    const argv = suite.command(junit);
    if (argv === undefined) continue;
    const lane = runs.get(suite.lane) ?? [];
    lane.push({ label, argv, junit, minutes: suite.minutes, env: extraEnv });
    runs.set(suite.lane, lane);
  }
  // Each lane runs its suites one after another; the lanes run side by side.
  const laneResults = await Promise.all(
    [...runs.values()].map(async (lane) => {
      const out: SuiteResult[] = [];
      for (const run of lane) out.push(await runSuite(run));
      return out;
    }),
  );
  const suiteResults = laneResults.flat();
  for (const r of suiteResults) {
    total.passed += r.counts.passed;
    total.failed += r.counts.failed;
    total.skipped += r.counts.skipped;
  }
  results.push(...suiteResults);
  console.log("");
  for (const line of timeLines(results, (performance.now() - started) / 1000)) console.log(line);
  // A test that could not run here (no shader-f16, no shared fixture) is skipped and counted as
  // such, never as passed.
  console.log(`\n${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
  return total.failed > 0 || suiteResults.some((r) => r.crashed) ? 1 : 0;
}
