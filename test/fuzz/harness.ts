/**
 * The fuzz loop. Each fuzzer generates inputs from a seeded generator and runs the code under
 * test on them; every run must return (accepted) or throw an `EngineError` of a kind the fuzzer
 * expects (refused). A refusal is classified (see `outcome.ts`): Kiln's own validation, or a
 * library whose error the wrapper kept as `cause`. The policy:
 *
 * - a library error class (`@huggingface/jinja threw SyntaxError`) is allowed only when the
 *   fuzzer's corpus holds an input that stands for it; any new class fails the run, and its
 *   first input per throwing function is written to `test/artifacts/fuzz/<corpus>.jsonl`;
 * - a library crash (`TypeError`, `RangeError`, `ReferenceError`: the library did not expect the
 *   input) is a class of its own per Kiln file it came through (`... threw TypeError via
 *   chat.ts`). Kiln validates what the library cannot take (a crash class is fixed there, its
 *   inputs kept in the corpus as Kiln's refusals); a crash Kiln cannot prevent without parsing
 *   the format itself stays in the corpus with a note saying why;
 * - every corpus input is replayed first and must give the outcome recorded with it.
 *
 * Each run of the test suite draws a fresh seed and prints it; `KILN_FUZZ_SEED=N` replays one.
 *
 * Heap: the heap after a full GC is sampled after the warm-up and at 4, 16... times its runs;
 * growth per run is measured over the second half of the runs (so that what is allocated once,
 * compiled code or a library's tables, does not count) and must stay under `heapPerRunBytes`
 * (default 4 KiB). Measured on a shared 2-core CPU, the fuzzers grow by -1 to ~300 B per run;
 * GGUF headers, with only 200 to 400 runs in `npm test`, by up to ~2.1 KiB (still warming up: 28
 * B per run over 1,100 runs at `KILN_FUZZ_SCALE=5`), so their bound is 16 KiB. A leak of 100 KiB
 * per run fails either bound by far (`harness_test.ts` checks that it does).
 */
import { ok } from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import type { ErrorType } from "../../src/contract/errors.ts";
import { corpusLine, readCorpus, writeFindings } from "./corpus.ts";
import { fuzzScale, fuzzSeed, rng } from "./fuzz.ts";
import { classify, libraryClass, type Outcome, outcomeLabel } from "./outcome.ts";

// Deep enough that the Kiln file a library error came through is on its stack.
Error.stackTraceLimit = Math.max(Error.stackTraceLimit, 200);

/** One fuzzer. */
export interface FuzzTarget<T> {
  /** Printed in every line. */
  name: string;
  /** The corpus, `test/fuzz/corpus/<corpus>.jsonl`; none: no corpus, no library error allowed. */
  corpus?: string;
  /** EngineError kinds a refusal may have (for this fuzzer's inputs). */
  expect: readonly ErrorType[];
  /** One input; must be JSON with `Uint8Array`s (see `corpus.ts`) so a finding can be kept. */
  generate: (r: () => number) => T;
  /** The code under test: return to accept, throw an `EngineError` to refuse. */
  run: (input: T) => unknown;
  /** Milliseconds to fuzz for in `npm test` (times `KILN_FUZZ_SCALE`; default 2,000). */
  ms?: number;
  /** Most runs in `npm test` (times `KILN_FUZZ_SCALE`; default 5,000). */
  runs?: number;
  /**
   * A hang guard: a run past this many ms or 1,000 times the warm-up's median run, whichever is
   * longer (default 2,000), is run again; it fails when it is that slow again (a stall of a
   * loaded machine is printed, not failed).
   */
  hangMs?: number;
  /** Most the heap may grow per run on average after the warm-up (default 4 KiB). */
  heapPerRunBytes?: number;
}

/** What a fuzzer did. */
export interface FuzzReport {
  seed: number;
  runs: number;
  accepted: number;
  /** Refusals by EngineError kind. */
  refused: Record<string, number>;
  /** Refusals by who refused: `Kiln`, or a library class, with counts per throwing function. */
  by: Map<string, { count: number; sites: Map<string, number> }>;
  /** Average heap growth per run after the warm-up, when enough runs were measured. */
  heapPerRun: number | undefined;
  /** Failures: corpus replays that changed, crashes, new classes, wrong kinds, hangs. */
  failures: string[];
  /** Runs past the hang guard that were quick when run again (the machine stalled). */
  stalls: string[];
}

let gcFn: (() => void) | undefined;
/** A full garbage collection (V8's `gc`, exposed through `node:vm`). */
export function fullGc(): void {
  if (gcFn === undefined) {
    v8.setFlagsFromString("--expose-gc");
    gcFn = vm.runInNewContext("gc") as () => void;
  }
  gcFn();
}

const turn = () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * The heap after a full GC. Objects behind a `WeakRef` stay alive until the current job ends and
 * finalizers run in later tasks (Deno's `Blob`s use both), so the GC runs after event-loop turns.
 */
async function heapNow(): Promise<number> {
  await turn();
  fullGc();
  await turn();
  fullGc();
  return Deno.memoryUsage().heapUsed;
}

async function attempt<T>(target: FuzzTarget<T>, input: T): Promise<Outcome> {
  try {
    await target.run(input);
    return classify(undefined, true);
  } catch (e) {
    return classify(e);
  }
}

/** Count `o` in `rep`. */
function tally(rep: FuzzReport, o: Outcome): void {
  if (o.kind === "accepted") {
    rep.accepted++;
    return;
  }
  if (o.kind === "refused") rep.refused[o.type] = (rep.refused[o.type] ?? 0) + 1;
  const cls = libraryClass(o) ?? "Kiln";
  const t = rep.by.get(cls) ?? { count: 0, sites: new Map<string, number>() };
  t.count++;
  t.sites.set(o.site, (t.sites.get(o.site) ?? 0) + 1);
  rep.by.set(cls, t);
}

/**
 * Heap growth per run over the second half of the runs after the warm-up (from the last sample
 * at most halfway there to the end), so that what a run allocates once (compiled code, a
 * library's first-use tables) does not count; undefined under 100 runs.
 */
async function growthPerRun(samples: [number, number][], runs: number) {
  if (samples.length === 0) return undefined;
  const first = samples[0]![0];
  const from = samples.filter(([n]) => n - first <= (runs - first) / 2).at(-1)!;
  if (runs - from[0] < 100) return undefined;
  return (await heapNow() - from[1]) / (runs - from[0]);
}

/** Why `o` is not acceptable, or undefined when it is. */
function verdict(o: Outcome, expect: readonly ErrorType[], known: ReadonlySet<string>) {
  if (o.kind === "accepted") return undefined;
  if (o.kind === "thrown") return `threw ${o.name} past Kiln (${o.by}, ${o.site}): ${o.message}`;
  if (!expect.includes(o.type)) return `refused as ${o.type}, expected ${expect.join(" or ")}`;
  const cls = libraryClass(o);
  if (cls === undefined) return undefined;
  if (!known.has(cls)) return `new class: ${cls} (in ${o.site}): ${o.message}`;
  return undefined;
}

/** The library classes the corpus stands for (from `Kind (class)` labels). */
function knownClasses(outcomes: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const label of outcomes) {
    const cls = /^\w+ \((.+)\)$/.exec(label)?.[1];
    if (cls !== undefined && cls !== "Kiln") out.add(cls);
  }
  return out;
}

function summary(name: string, rep: FuzzReport, replayed: number, ms: number, bound: number) {
  const kinds = Object.entries(rep.refused).map(([k, n]) => `${k} ${n}`).join(", ");
  const by = [...rep.by].sort((a, b) => b[1].count - a[1].count).map(([cls, { count, sites }]) =>
    cls === "Kiln"
      ? `Kiln's validation ${count}`
      : `${cls} ${count} times (${
        [...sites].sort((a, b) => b[1] - a[1]).map(([s, n]) => `${s} ${n}`).join(", ")
      })`
  );
  const heap = rep.heapPerRun === undefined
    ? "heap not measured (too few runs)"
    : `heap ${rep.heapPerRun >= 0 ? "+" : ""}${Math.round(rep.heapPerRun)} B/run (bound ${bound})`;
  const total = rep.runs - rep.accepted;
  const stalls = rep.stalls.length === 0
    ? ""
    : `; past the hang guard but quick again (a stall): ${rep.stalls.join(", ")}`;
  return `${name}: seed ${rep.seed} (KILN_FUZZ_SEED=${rep.seed} replays it), ${replayed} corpus ` +
    `inputs replayed, ${rep.runs} runs in ${ms} ms: ${rep.accepted} accepted, ${total} refused ` +
    `(${kinds}); refused by: ${by.join("; ") || "none"}; ${heap}${stalls}`;
}

/**
 * Replay `target`'s corpus, then fuzz it with a fresh seed until the time or run budget is spent;
 * fails (after printing the counts) on any failure, with the findings written out.
 */
export async function fuzz<T>(target: FuzzTarget<T>): Promise<FuzzReport> {
  const scale = fuzzScale();
  const seed = fuzzSeed();
  const r = rng(seed);
  const corpus = target.corpus === undefined ? [] : await readCorpus(target.corpus);
  const known = knownClasses(corpus.map((e) => e.outcome));
  const rep: FuzzReport = {
    seed,
    runs: 0,
    accepted: 0,
    refused: {},
    by: new Map(),
    heapPerRun: undefined,
    failures: [],
    stalls: [],
  };
  const findings = new Map<string, string>();
  for (const [i, entry] of corpus.entries()) {
    const o = await attempt(target, entry.input as T);
    const why = verdict(o, target.expect, known);
    if (outcomeLabel(o) !== entry.outcome || why !== undefined) {
      rep.failures.push(
        `corpus ${target.corpus}.jsonl line ${i + 1} (${entry.note}): recorded ` +
          `${entry.outcome}, now ${outcomeLabel(o)}${why === undefined ? "" : `: ${why}`}`,
      );
    }
  }
  const maxRuns = Math.round((target.runs ?? 5000) * scale);
  const warm = Math.min(200, Math.max(20, Math.floor(maxRuns / 10)));
  const start = performance.now();
  let deadline = start + (target.ms ?? 2000) * scale;
  let hangMs = target.hangMs ?? 2000;
  const warmTimes: number[] = [];
  // Heap samples (runs, bytes) after the warm-up, at 1, 4, 16... times the warm-up's runs.
  const heap: [number, number][] = [];
  while (rep.runs < maxRuns && performance.now() < deadline) {
    rep.runs++;
    const input = target.generate(r);
    const t0 = performance.now();
    const o = await attempt(target, input);
    const took = performance.now() - t0;
    const where = `seed ${seed} run ${rep.runs}`;
    tally(rep, o);
    let slow: string | undefined;
    if (took > hangMs) {
      // A hang comes from the input and comes back; a stall of a loaded machine does not.
      const t1 = performance.now();
      await attempt(target, input);
      const again = performance.now() - t1;
      if (again > hangMs) slow = `took ${Math.round(took)} ms, and ${Math.round(again)} again`;
      else rep.stalls.push(`run ${rep.runs}: ${Math.round(took)} ms, ${Math.round(again)} again`);
    }
    const why = slow ?? verdict(o, target.expect, known);
    const key = slow !== undefined
      ? "hang"
      : `${outcomeLabel(o)} ${o.kind === "accepted" ? "" : o.site}`;
    if (why !== undefined && !findings.has(key)) {
      rep.failures.push(`${where}: ${why}`);
      findings.set(key, corpusLine(outcomeLabel(o), `${where}: ${why}`, input));
    }
    if (rep.runs <= warm) warmTimes.push(took);
    if (rep.runs === warm) {
      warmTimes.sort((a, b) => a - b);
      hangMs = Math.max(hangMs, 1000 * warmTimes[warmTimes.length >> 1]!);
    }
    if (rep.runs >= warm && rep.runs === warm * 4 ** heap.length) {
      const t = performance.now();
      heap.push([rep.runs, await heapNow()]);
      deadline += performance.now() - t; // GC time is not fuzzing time
    }
  }
  rep.heapPerRun = await growthPerRun(heap, rep.runs);
  const ms = Math.round(performance.now() - start);
  const bound = target.heapPerRunBytes ?? 4096;
  console.log(summary(target.name, rep, corpus.length, ms, bound));
  if (findings.size > 0 && target.corpus !== undefined) {
    const path = await writeFindings(target.corpus, [...findings.values()]);
    console.log(`${target.name}: ${findings.size} finding(s) written to ${path}`);
  }
  ok(rep.failures.length === 0, `${target.name}:\n  ${rep.failures.join("\n  ")}`);
  ok(
    rep.heapPerRun === undefined || rep.heapPerRun < bound,
    `${target.name}: the heap grew by ${rep.heapPerRun} bytes per run (bound ${bound})`,
  );
  ok(rep.runs >= Math.min(maxRuns, 20), `${target.name}: only ${rep.runs} runs`);
  return rep;
}
