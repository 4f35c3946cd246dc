/**
 * Seeded mutators for fuzzing the parsers of untrusted input: a small valid input gets JSON values
 * swapped for hostile ones, keys dropped or added, bytes flipped, text cut or spliced. The loop
 * and what it asserts are in `harness.ts`.
 *
 * In `npm test` each fuzzer runs for about 2 seconds (at most 5,000 runs) with a fresh seed it
 * prints. `deno task fuzz` runs 30 times longer (`KILN_FUZZ_SCALE=N` sets the factor);
 * `KILN_FUZZ_SEED=N` replays one seed.
 */
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

/** The seed to use: `KILN_FUZZ_SEED` when set, else a fresh random one. */
export function fuzzSeed(): number {
  return ENV.KILN_FUZZ_SEED ?? crypto.getRandomValues(new Uint32Array(1))[0]!;
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
