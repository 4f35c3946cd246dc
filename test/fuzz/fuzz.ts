/**
 * Seeded, bounded fuzzing of the parsers of untrusted input. Each fuzz test mutates a small valid
 * input (JSON values swapped for hostile ones, keys dropped or added, bytes flipped, text cut or
 * spliced) and asserts only that the parser returns or throws an `EngineError`, that no run takes
 * longer than a bound, and that the heap does not grow past a bound.
 *
 * In `npm test` each fuzzer runs for about 2 seconds (at most 5,000 runs). `deno task fuzz` runs
 * 30 times longer (`KILN_FUZZ_SCALE=N` sets the factor); `KILN_FUZZ_SEED=N` replays one seed.
 */
import { ok } from "node:assert/strict";
import { EngineError } from "../../src/contract/errors.ts";
import { parseEnv } from "../../src/adapters/deno/flags.ts";

/** A small, fast seeded generator of floats in [0, 1) (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * The environment the fuzzers read, checked like a command line's flags: a bad value is an
 * error naming the variable when this module loads (unset or empty: the defaults).
 */
const ENV = parseEnv({
  KILN_FUZZ_SCALE: { type: "number", min: 0, help: "how much longer than in npm test to fuzz" },
  KILN_FUZZ_TASK_SCALE: { type: "number", min: 0, help: "the fuzz task's scale (30)" },
  KILN_FUZZ_SEED: { type: "integer", min: 0, max: 2 ** 32 - 1, help: "replay this seed" },
});

/**
 * How much longer than in `npm test` to fuzz: `KILN_FUZZ_SCALE`, else the `fuzz` task's
 * `KILN_FUZZ_TASK_SCALE` (30), else 1; at least 0.05.
 */
export function fuzzScale(): number {
  return Math.max(0.05, ENV.KILN_FUZZ_SCALE ?? ENV.KILN_FUZZ_TASK_SCALE ?? 1);
}

/** The seed to use: `KILN_FUZZ_SEED` when set, else `fallback`. */
export function fuzzSeed(fallback: number): number {
  return ENV.KILN_FUZZ_SEED ?? fallback;
}

/** A nested array `n` deep, as JSON.parse builds it. */
export function deepArray(n: number): unknown {
  return JSON.parse("[".repeat(n) + "]".repeat(n));
}

const DEEP = deepArray(2750);

/** Values that have broken parsers: wrong types, extremes, prototype names, deep nesting. */
export const HOSTILE: readonly unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  0.5,
  1e300,
  -1e300,
  2 ** 31,
  2 ** 32,
  2 ** 53 + 2,
  "",
  ".",
  "..",
  "a/b",
  "\u0000",
  "constructor",
  "__proto__",
  "toString",
  "F32",
  "BF16",
  "LlamaForCausalLM",
  "llama3",
  "x".repeat(300),
  [],
  [null],
  [[1]],
  [-1],
  [1e300],
  {},
  DEEP,
  [DEEP],
  JSON.parse('{"toString":1}'),
  JSON.parse('{"toString":1,"valueOf":1}'),
  JSON.parse('{"__proto__":{"x":1}}'),
];

type Node = Record<string, unknown> | unknown[];

/** Containers of `root` (not inside hostile values), breadth first, at most 400. */
function containers(root: unknown): Node[] {
  const out: Node[] = [];
  const queue: unknown[] = [root];
  while (queue.length > 0 && out.length < 400) {
    const v = queue.shift();
    if (typeof v !== "object" || v === null || HOSTILE.includes(v)) continue;
    out.push(v as Node);
    queue.push(...Object.values(v as Node));
  }
  return out;
}

function pick<T>(r: () => number, items: readonly T[]): T {
  return items[Math.floor(r() * items.length)]!;
}

/** A fresh copy of `base` with 1 to 4 random edits to its values and keys. */
export function mutateJson(
  base: unknown,
  r: () => number,
  extra: readonly unknown[] = [],
): unknown {
  const root = { v: structuredClone(base) };
  const edits = 1 + Math.floor(r() * 4);
  for (let e = 0; e < edits; e++) {
    const nodes = containers(root);
    const node = pick(r, nodes);
    const keys = Object.keys(node);
    const key = keys.length > 0 && r() < 0.85 ? pick(r, keys) : `k${Math.floor(r() * 4)}`;
    const what = r();
    // Hostile values are shared and never edited; extras are copied, as later edits may.
    const value = r() < 0.8 || extra.length === 0
      ? pick(r, HOSTILE)
      : structuredClone(pick(r, extra));
    if (what < 0.7) (node as Record<string, unknown>)[key] = value;
    else if (what < 0.85 && !Array.isArray(node)) delete (node as Record<string, unknown>)[key];
    else if (Array.isArray(node)) node.push(value);
    else (node as Record<string, unknown>)[key] = [value];
  }
  return root.v;
}

/** `bytes` with 1 to 4 random edits: flipped bytes, cuts, spliced copies, digits changed. */
export function mutateBytes(base: Uint8Array, r: () => number): Uint8Array<ArrayBuffer> {
  let out = new Uint8Array(base);
  const at = (n = out.length) => Math.floor(r() * Math.max(1, n));
  const edits = 1 + at(4);
  for (let e = 0; e < edits && out.length > 0; e++) {
    const kind = at(4);
    if (kind === 0) out[at()] = at(256);
    else if (kind === 1) out = out.slice(0, at());
    else if (kind === 2) out[at()] = pick(r, [0x30, 0x39, 0x2d, 0x2e, 0x65, 0x5b, 0x7b, 0x22]);
    else {
      const [s, n, d] = [at(), at(64), at()];
      const copy = new Uint8Array(out.length + n);
      copy.set(out.subarray(0, d));
      copy.set(out.subarray(s, s + n), d);
      copy.set(out.subarray(d), d + Math.min(n, out.length - s));
      out = copy;
    }
  }
  return out;
}

export interface FuzzOptions {
  seed: number;
  /** Milliseconds to fuzz for in `npm test` (times `KILN_FUZZ_SCALE`). */
  ms?: number;
  /** Most runs in `npm test` (times `KILN_FUZZ_SCALE`). */
  runs?: number;
  /** Longest one run may take. */
  runMs?: number;
  /** Most the heap may grow over the whole fuzz (bytes). */
  heapBytes?: number;
}

export interface FuzzResult {
  seed: number;
  runs: number;
  accepted: number;
  refused: number;
  ms: number;
}

/**
 * Run `body` with a seeded generator until the time or run budget is spent: each run must
 * return (accepted) or throw an `EngineError` (refused), within `runMs`.
 */
export async function fuzz(
  name: string,
  options: FuzzOptions,
  body: (r: () => number, run: number) => unknown,
): Promise<FuzzResult> {
  const scale = fuzzScale();
  const seed = fuzzSeed(options.seed);
  const r = rng(seed);
  const maxRuns = Math.round((options.runs ?? 5000) * scale);
  const start = performance.now();
  const deadline = start + (options.ms ?? 2000) * scale;
  const heap0 = Deno.memoryUsage().heapUsed;
  let [runs, accepted, refused, maxHeap] = [0, 0, 0, heap0];
  while (runs < maxRuns && performance.now() < deadline) {
    runs++;
    const t0 = performance.now();
    try {
      await body(r, runs);
      accepted++;
    } catch (e) {
      ok(e instanceof EngineError, `${name} seed ${seed} run ${runs}: ${(e as Error)?.stack ?? e}`);
      refused++;
    }
    const took = performance.now() - t0;
    ok(took < (options.runMs ?? 2000), `${name} seed ${seed} run ${runs} took ${took} ms`);
    if (runs % 64 === 0) maxHeap = Math.max(maxHeap, Deno.memoryUsage().heapUsed);
  }
  const grew = maxHeap - heap0;
  ok(grew < (options.heapBytes ?? 512 * 2 ** 20), `${name}: the heap grew by ${grew} bytes`);
  ok(runs >= Math.min(maxRuns, 20), `${name}: only ${runs} runs`);
  const ms = Math.round(performance.now() - start);
  console.log(
    `${name}: seed ${seed}, ${runs} runs in ${ms} ms: ${accepted} accepted, ${refused} refused`,
  );
  return { seed, runs, accepted, refused, ms };
}
