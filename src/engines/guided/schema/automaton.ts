/**
 * Finite automata over code points, for exact string languages: a regex tree (`regex.ts`) to a
 * deterministic automaton (Thompson's construction, then subsets), minimized; the product of two
 * (both languages at once: `pattern` and `format`); and the product with a length counter
 * (`minLength`, `maxLength`, counted in code points). The alphabet is the Unicode scalar values:
 * a string a model writes as UTF-8 holds no lone surrogate, so a set's surrogates are dropped
 * here and a pattern that matches only strings with one accepts nothing.
 *
 * Anchors are exact wherever they are: `^` holds before the first code point only, `$` after the
 * last only (no `m` flag), so `a^b` accepts nothing and `(^a|b)c` is read as written. Every
 * construction is budgeted ({@linkcode Budget}): past it, a {@linkcode PatternRefusal} says the
 * schema is too large to enforce.
 */
import { type CharSet, intersect, isEmpty, normalize, SCALARS, setKey } from "./charset.ts";
import { PatternRefusal, type Regex } from "./regex.ts";

/** A deterministic automaton; a missing transition rejects. Each state's edge sets are disjoint. */
export interface Dfa {
  readonly start: number;
  readonly accept: readonly boolean[];
  readonly edges: readonly (readonly Edge[])[];
}

/** A transition on any code point of `set`. */
export interface Edge {
  readonly set: CharSet;
  readonly to: number;
}

/** Limits on the automata and rules built for one string schema. */
export interface Budget {
  /** States of the nondeterministic automaton (each repetition's copy counts). */
  nfaStates: number;
  /** States of a deterministic automaton or product, before minimizing. */
  dfaStates: number;
  /**
   * States of a minimal automaton written as EBNF, one rule each: XGrammar compiles such a
   * rule in ~5-25 ms over a 50k-token vocabulary (the wider its sets, the longer).
   */
  states: number;
  /** EBNF rules one string schema may add in all (a pattern's parts, sets' guards...). */
  rules: number;
}

/** The default {@linkcode Budget}. */
export const BUDGET: Readonly<Budget> = {
  nfaStates: 20_000,
  dfaStates: 4_000,
  states: 200,
  rules: 4_000,
};

function tooLarge(what: string, limit: number): never {
  throw new PatternRefusal(
    `is too large to enforce exactly: its ${what} passes ${limit} states (Kiln's budget)`,
  );
}

/** Thompson's automaton: edges on sets, ε, `^` (only at the start) and `$` (only at the end). */
class Nfa {
  readonly chars: Edge[][] = [];
  readonly eps: number[][] = [];
  readonly starts: number[][] = [];
  readonly ends: number[][] = [];

  constructor(readonly limit: number) {}

  state(): number {
    if (this.chars.length >= this.limit) tooLarge("automaton", this.limit);
    this.chars.push([]);
    this.eps.push([]);
    this.starts.push([]);
    this.ends.push([]);
    return this.chars.length - 1;
  }

  /** Edges from `from` to `to` reading exactly `node`'s language. */
  build(node: Regex, from: number, to: number): void {
    switch (node.kind) {
      case "set": {
        const set = intersect(node.set, SCALARS);
        if (!isEmpty(set)) this.chars[from]!.push({ set, to });
        return;
      }
      case "start":
        this.starts[from]!.push(to);
        return;
      case "end":
        this.ends[from]!.push(to);
        return;
      case "alt":
        for (const alt of node.alts) this.build(alt, from, to);
        return;
      case "seq": {
        let at = from;
        node.items.forEach((item, i) => {
          const next = i === node.items.length - 1 ? to : this.state();
          this.build(item, at, next);
          at = next;
        });
        if (node.items.length === 0) this.eps[from]!.push(to);
        return;
      }
      case "repeat":
        return this.#repeat(node.node, node.min, node.max, from, to);
    }
  }

  #repeat(node: Regex, min: number, max: number, from: number, to: number): void {
    if (min > this.limit) tooLarge("automaton", this.limit);
    let at = from;
    for (let i = 0; i < min; i++) {
      const next = this.state();
      this.build(node, at, next);
      at = next;
    }
    if (max === Infinity) {
      const loop = this.state(), back = this.state();
      this.eps[at]!.push(loop);
      this.build(node, loop, back);
      this.eps[back]!.push(loop);
      this.eps[loop]!.push(to);
      return;
    }
    if (max - min > this.limit) tooLarge("automaton", this.limit);
    for (let i = min; i < max; i++) {
      this.eps[at]!.push(to);
      const next = this.state();
      this.build(node, at, next);
      at = next;
    }
    this.eps[at]!.push(to);
  }
}

/**
 * The minimal automaton of `regex`: anchored (the whole string matches, as a guided `regex`
 * option is read), or not (the string contains a match, as JSON Schema's `pattern` is read).
 */
export function regexDfa(regex: Regex, anchored: boolean, budget: Budget = BUDGET): Dfa {
  const nfa = new Nfa(budget.nfaStates);
  const first = nfa.state(), last = nfa.state();
  if (anchored) nfa.build(regex, first, last);
  else {
    const begin = nfa.state(), end = nfa.state();
    nfa.chars[first]!.push({ set: SCALARS, to: first });
    nfa.eps[first]!.push(begin);
    nfa.build(regex, begin, end);
    nfa.eps[end]!.push(last);
    nfa.chars[last]!.push({ set: SCALARS, to: last });
  }
  return minimize(subsets(nfa, first, last, budget.dfaStates));
}

/**
 * The subset construction. A configuration holds NFA states, state `s + n` standing for `s`
 * once a `$` was passed (no code point may follow); `^` edges are followed in the first
 * configuration only.
 */
function subsets(nfa: Nfa, first: number, last: number, limit: number): Dfa {
  const n = nfa.chars.length;
  const closure = (seed: Iterable<number>, atStart: boolean): number[] => {
    const seen = new Set(seed), work = [...seen];
    const reach = (t: number) => {
      if (!seen.has(t)) seen.add(t), work.push(t);
    };
    while (work.length > 0) {
      const s = work.pop()!, ended = s >= n, base = ended ? s - n : s, off = ended ? n : 0;
      for (const t of nfa.eps[base]!) reach(t + off);
      if (atStart) { for (const t of nfa.starts[base]!) reach(t + off); }
      for (const t of nfa.ends[base]!) reach(t + n);
    }
    return [...seen].sort((a, b) => a - b);
  };
  const ids = new Map<string, number>(), configs: number[][] = [];
  const accept: boolean[] = [], edges: Edge[][] = [];
  const id = (config: number[]): number => {
    const key = config.join(",");
    let i = ids.get(key);
    if (i === undefined) {
      if (configs.length >= limit) tooLarge("deterministic automaton", limit);
      i = configs.length;
      ids.set(key, i);
      configs.push(config);
      accept.push(config.includes(last) || config.includes(last + n));
    }
    return i;
  };
  id(closure([first], true));
  for (let i = 0; i < configs.length; i++) {
    const out = configs[i]!.filter((s) => s < n).flatMap((s) => nfa.chars[s]!);
    edges.push(split(out).map(({ set, to }) => ({ set, to: id(closure(to, false)) })));
  }
  return { start: 0, accept, edges };
}

/**
 * Edges on overlapping sets, split into disjoint sets each with every target it reaches;
 * sets with the same targets merged.
 */
function split(edges: readonly Edge[]): { set: CharSet; to: number[] }[] {
  const points = new Set<number>();
  for (const { set } of edges) for (const [lo, hi] of set) points.add(lo).add(hi + 1);
  const bounds = [...points].sort((a, b) => a - b);
  const byTargets = new Map<string, { set: [number, number][]; to: number[] }>();
  for (let b = 0; b + 1 < bounds.length; b++) {
    const lo = bounds[b]!, hi = bounds[b + 1]! - 1;
    const to = [...new Set(edges.filter((e) => covers(e.set, lo)).map((e) => e.to))].sort();
    if (to.length === 0) continue;
    const key = to.join(",");
    const group = byTargets.get(key) ?? { set: [], to };
    group.set.push([lo, hi]);
    byTargets.set(key, group);
  }
  return [...byTargets.values()].map(({ set, to }) => ({ set: normalize(set), to }));
}

function covers(set: CharSet, cp: number): boolean {
  return set.some(([lo, hi]) => lo <= cp && cp <= hi);
}

/** `dfa` with only the states both reachable and able to reach acceptance, renumbered. */
export function trim(dfa: Dfa): Dfa {
  const reached = new Set([dfa.start]), work = [dfa.start];
  while (work.length > 0) {
    for (const { to } of dfa.edges[work.pop()!]!) {
      if (!reached.has(to)) reached.add(to), work.push(to);
    }
  }
  const live = new Set(dfa.accept.flatMap((a, s) => a && reached.has(s) ? [s] : []));
  for (let changed = true; changed;) {
    changed = false;
    for (const s of reached) {
      if (!live.has(s) && dfa.edges[s]!.some((e) => live.has(e.to))) live.add(s), changed = true;
    }
  }
  if (!live.has(dfa.start)) return { start: 0, accept: [false], edges: [[]] };
  const order = [...live].sort((a, b) => a - b), index = new Map(order.map((s, i) => [s, i]));
  return {
    start: index.get(dfa.start)!,
    accept: order.map((s) => dfa.accept[s]!),
    edges: order.map((s) =>
      dfa.edges[s]!.filter((e) => live.has(e.to)).map((e) => ({ set: e.set, to: index.get(e.to)! }))
    ),
  };
}

/** The minimal automaton of `dfa`'s language (trimmed, then Moore's partition refinement). */
export function minimize(input: Dfa): Dfa {
  const dfa = trim(input);
  const n = dfa.accept.length;
  let cls: number[] = dfa.accept.map((a) => a ? 1 : 0), count = new Set(cls).size;
  for (;;) {
    const keys = new Map<string, number>();
    const next = cls.map((c, s) => {
      const byClass = new Map<number, CharSet>();
      for (const e of dfa.edges[s]!) {
        byClass.set(cls[e.to]!, [...byClass.get(cls[e.to]!) ?? [], ...e.set]);
      }
      const sig = [...byClass].sort((a, b) => a[0] - b[0]).map(([k, set]) =>
        `${k}:${setKey(normalize(set))}`
      );
      const key = `${c}|${sig.join(";")}`;
      if (!keys.has(key)) keys.set(key, keys.size);
      return keys.get(key)!;
    });
    cls = next;
    if (keys.size === count) break;
    count = keys.size;
  }
  const accept: boolean[] = new Array(count).fill(false), edges: Edge[][] = [];
  for (let s = 0; s < n; s++) {
    accept[cls[s]!] = dfa.accept[s]!;
    if (edges[cls[s]!] !== undefined) continue;
    const byClass = new Map<number, CharSet>();
    for (const e of dfa.edges[s]!) {
      byClass.set(cls[e.to]!, [...byClass.get(cls[e.to]!) ?? [], ...e.set]);
    }
    edges[cls[s]!] = [...byClass].map(([to, set]) => ({ set: normalize(set), to }));
  }
  return renumber({ start: cls[dfa.start]!, accept, edges });
}

/** `dfa` with its states numbered in breadth-first order from the start (a canonical form). */
function renumber(dfa: Dfa): Dfa {
  const order = [dfa.start], index = new Map([[dfa.start, 0]]);
  for (let i = 0; i < order.length; i++) {
    for (const { to } of dfa.edges[order[i]!]!) {
      if (!index.has(to)) index.set(to, order.length), order.push(to);
    }
  }
  return {
    start: 0,
    accept: order.map((s) => dfa.accept[s]!),
    edges: order.map((s) => dfa.edges[s]!.map((e) => ({ set: e.set, to: index.get(e.to)! }))),
  };
}

/** The minimal automaton of the strings both `a` and `b` accept. */
export function product(a: Dfa, b: Dfa, budget: Budget = BUDGET): Dfa {
  return explore(
    `${a.start},${b.start}`,
    (key) => {
      const [p, q] = key.split(",").map(Number) as [number, number];
      const edges: { set: CharSet; to: string }[] = [];
      for (const ea of a.edges[p]!) {
        for (const eb of b.edges[q]!) {
          const set = intersect(ea.set, eb.set);
          if (!isEmpty(set)) edges.push({ set, to: `${ea.to},${eb.to}` });
        }
      }
      return { accept: a.accept[p]! && b.accept[q]!, edges };
    },
    budget.dfaStates,
    "product of pattern and format",
  );
}

/** The minimal automaton of `dfa`'s strings of `min` to `max` code points. */
export function withLength(dfa: Dfa, min: number, max: number, budget: Budget = BUDGET): Dfa {
  const cap = max === Infinity ? min : max;
  return explore(
    `${dfa.start},0`,
    (key) => {
      const [q, k] = key.split(",").map(Number) as [number, number];
      const next = max === Infinity ? Math.min(k + 1, min) : k + 1;
      const edges = next > cap
        ? []
        : dfa.edges[q]!.map((e) => ({ set: e.set, to: `${e.to},${next}` }));
      return { accept: dfa.accept[q]! && k >= min, edges };
    },
    budget.dfaStates,
    "length bounds' automaton",
  );
}

/** The automaton reachable from `start` by `step`, minimized; states past `limit` refused. */
function explore(
  start: string,
  step: (key: string) => { accept: boolean; edges: { set: CharSet; to: string }[] },
  limit: number,
  what: string,
): Dfa {
  const ids = new Map([[start, 0]]), keys = [start], accept: boolean[] = [], edges: Edge[][] = [];
  for (let i = 0; i < keys.length; i++) {
    const s = step(keys[i]!);
    accept.push(s.accept);
    edges.push(s.edges.map(({ set, to }) => {
      let id = ids.get(to);
      if (id === undefined) {
        if (keys.length >= limit) tooLarge(what, limit);
        ids.set(to, id = keys.length);
        keys.push(to);
      }
      return { set, to: id };
    }));
  }
  return minimize({ start: 0, accept, edges });
}

/**
 * When `dfa`'s language is `C{min,max}` for one set `C` (`max` may be `Infinity`), that set and
 * those counts; else undefined. `dfa` is minimal.
 */
export function countedSet(dfa: Dfa): { set: CharSet; min: number; max: number } | undefined {
  let set: CharSet | undefined, s = dfa.start, min: number | undefined;
  for (let k = 0; k <= dfa.accept.length; k++) {
    if (dfa.accept[s] && min === undefined) min = k;
    if (!dfa.accept[s] && min !== undefined) return undefined;
    const out = dfa.edges[s]!;
    if (out.length === 0) return min === undefined ? undefined : { set: set ?? [], min, max: k };
    if (out.length > 1 || (set !== undefined && setKey(set) !== setKey(out[0]!.set))) {
      return undefined;
    }
    set = out[0]!.set;
    if (out[0]!.to === s) return dfa.accept[s] ? { set, min: min!, max: Infinity } : undefined;
    s = out[0]!.to;
  }
  return undefined;
}
