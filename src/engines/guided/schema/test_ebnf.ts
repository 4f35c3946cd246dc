/**
 * For tests: EBNF text in XGrammar's dialect read back into a tree, a membership test (does the
 * grammar derive exactly this string) and a random derivation (a string it derives), so tests
 * can judge the compiler's grammar text itself, independently of how it was built. Read as
 * XGrammar 0.1.27 reads it (see `utf8.ts`): a literal is its code points' UTF-8 bytes; a class
 * is a class of single bytes (a code point past 0xFF stands for its low byte), except a class of
 * one code point, which is that code point; a negated class is one UTF-8-shaped sequence whose
 * exclusions past 0x7F are ignored. Strings are matched and made as UTF-8 bytes.
 */

/** A parsed expression (`lit`: bytes). */
export type Node =
  | { t: "lit"; s: number[] }
  | { t: "cls"; ranges: [number, number][]; neg: boolean }
  | { t: "ref"; name: string }
  | { t: "seq"; xs: Node[] }
  | { t: "alt"; xs: Node[] }
  | { t: "rep"; x: Node; min: number; max: number };

/** Rules by name. */
export type Ebnf = Map<string, Node>;

/** `text` parsed (one `name ::= expr` per line). */
export function parseEbnf(text: string): Ebnf {
  const rules: Ebnf = new Map();
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const m = /^([A-Za-z_][A-Za-z0-9_]*) ::= (.*)$/.exec(line);
    if (m === null) throw new Error(`not a rule: ${line}`);
    const p = new Parser(m[2]!);
    const node = p.alt();
    if (p.i !== p.s.length) throw new Error(`trailing text at ${p.i}: ${line}`);
    rules.set(m[1]!, node);
  }
  return rules;
}

class Parser {
  i = 0;
  constructor(readonly s: string) {}

  alt(): Node {
    const xs = [this.seq()];
    while (this.eat("|")) xs.push(this.seq());
    return xs.length === 1 ? xs[0]! : { t: "alt", xs };
  }

  seq(): Node {
    const xs: Node[] = [];
    for (this.ws(); this.i < this.s.length && !")|".includes(this.s[this.i]!); this.ws()) {
      xs.push(this.postfix(this.atom()));
    }
    return xs.length === 1 ? xs[0]! : { t: "seq", xs };
  }

  postfix(x: Node): Node {
    for (;;) {
      const c = this.s[this.i];
      if (c === "*") (this.i++, x = { t: "rep", x, min: 0, max: Infinity });
      else if (c === "+") (this.i++, x = { t: "rep", x, min: 1, max: Infinity });
      else if (c === "?") (this.i++, x = { t: "rep", x, min: 0, max: 1 });
      else if (c === "{") {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(this.s.slice(this.i))!;
        this.i += m[0].length;
        const min = Number(m[1]);
        const max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
        x = { t: "rep", x, min, max };
      } else return x;
    }
  }

  atom(): Node {
    const c = this.s[this.i];
    if (c === "(") {
      this.i++;
      const x = this.alt();
      if (!this.eat(")")) throw new Error(`expected ) at ${this.i} in ${this.s}`);
      return x;
    }
    if (c === '"') {
      this.i++;
      const out: number[] = [];
      while (this.s[this.i] !== '"') out.push(...utf8(this.char()));
      this.i++;
      return { t: "lit", s: out };
    }
    if (c === "[") {
      this.i++;
      const neg = this.s[this.i] === "^";
      if (neg) this.i++;
      const ranges: [number, number][] = [];
      while (this.s[this.i] !== "]") {
        const lo = this.char();
        if (this.s[this.i] === "-" && this.s[this.i + 1] !== "]") {
          this.i++;
          ranges.push([lo, this.char()]);
        } else ranges.push([lo, lo]);
      }
      this.i++;
      if (!neg && ranges.length === 1 && ranges[0]![0] === ranges[0]![1]) {
        return { t: "lit", s: utf8(ranges[0]![0]) }; // one code point: a literal
      }
      const bytes = neg
        ? ranges
        : ranges.map(([a, b]): [number, number] => b > 0xff ? [a & 0xff, b & 0xff] : [a, b]);
      return { t: "cls", ranges: bytes, neg };
    }
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.s.slice(this.i));
    if (m === null) throw new Error(`unexpected ${c} at ${this.i} in ${this.s}`);
    this.i += m[0].length;
    return { t: "ref", name: m[0] };
  }

  char(): number {
    const c = this.s[this.i++]!;
    if (c !== "\\") {
      const cp = this.s.codePointAt(this.i - 1)!;
      if (cp > 0xffff) this.i++;
      return cp;
    }
    const e = this.s[this.i++]!;
    const hex = (n: number) => {
      const v = parseInt(this.s.slice(this.i, this.i + n), 16);
      this.i += n;
      return v;
    };
    if (e === "n") return 10;
    if (e === "r") return 13;
    if (e === "t") return 9;
    if (e === "x") return hex(2);
    if (e === "u") return hex(4);
    if (e === "U") return hex(8);
    if (e === "0") return 0;
    return e.codePointAt(0)!;
  }

  ws() {
    while (this.s[this.i] === " ") this.i++;
  }

  eat(c: string): boolean {
    this.ws();
    if (this.s[this.i] !== c) return false;
    this.i++;
    return true;
  }
}

const inClass = (n: { ranges: [number, number][]; neg: boolean }, cp: number) =>
  n.ranges.some(([a, b]) => cp >= a && cp <= b) !== n.neg;

/** `cp`'s UTF-8 bytes (a surrogate in its three-byte form). */
function utf8(cp: number): number[] {
  if (cp < 0x80) return [cp];
  if (cp < 0x800) return [0xc0 | (cp >> 6), 0x80 | (cp & 63)];
  if (cp < 0x10000) return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63)];
  return [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 63), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63)];
}

/** The length of the UTF-8-shaped sequence at `i` of `b`, or 0. */
function sequence(b: readonly number[], i: number): number {
  const lead = b[i];
  if (lead === undefined) return 0;
  const n = lead < 0x80
    ? 1
    : lead >= 0xf0 && lead < 0xf8
    ? 4
    : lead >= 0xe0
    ? 3
    : lead >= 0xc0
    ? 2
    : 0;
  for (let k = 1; k < n; k++) if (((b[i + k] ?? 0) & 0xc0) !== 0x80) return 0;
  return n;
}

/** Whether `g` derives exactly `s` (its UTF-8 bytes) from `root`. */
export function derives(g: Ebnf, s: string, root = "root"): boolean {
  const cps = [...new TextEncoder().encode(s)];
  const memo = new Map<Node, Map<number, Set<number>>>();
  const ends = (n: Node, i: number): Set<number> => {
    let byPos = memo.get(n);
    if (byPos === undefined) memo.set(n, byPos = new Map());
    const known = byPos.get(i);
    if (known !== undefined) return known;
    const out = new Set<number>();
    byPos.set(i, out); // a cycle at the same position adds nothing
    const add = (xs: Iterable<number>) => {
      for (const x of xs) out.add(x);
    };
    switch (n.t) {
      case "lit":
        if (n.s.every((c, k) => cps[i + k] === c)) out.add(i + n.s.length);
        break;
      case "cls":
        if (!n.neg) {
          if (i < cps.length && inClass(n, cps[i]!)) out.add(i + 1);
        } else {
          const len = sequence(cps, i);
          if (len > 1 || (len === 1 && inClass(n, cps[i]!))) out.add(i + len);
        }
        break;
      case "ref":
        add(ends(g.get(n.name)!, i));
        break;
      case "alt":
        for (const x of n.xs) add(ends(x, i));
        break;
      case "seq": {
        let at = new Set([i]);
        for (const x of n.xs) {
          const next = new Set<number>();
          for (const p of at) for (const e of ends(x, p)) next.add(e);
          at = next;
        }
        add(at);
        break;
      }
      case "rep": {
        const step = (from: Set<number>) => {
          const next = new Set<number>();
          for (const p of from) for (const e of ends(n.x, p)) next.add(e);
          return next;
        };
        let at = new Set([i]);
        for (let k = 0; k < n.min && at.size > 0; k++) at = step(at);
        const seen = new Set(at);
        add(at);
        for (let k = n.min; k < n.max && at.size > 0; k++) {
          at = new Set([...step(at)].filter((p) => !seen.has(p)));
          for (const p of at) seen.add(p);
          add(at);
        }
        break;
      }
    }
    return out;
  };
  return ends(g.get(root)!, 0).has(cps.length);
}

/** Characters a negated class may be drawn from. */
const POOL = [
  ..." !#$%&'()*+,-./:;<=>?@[]^_`{|}~",
  ..."abcxyzABCXYZ0123456789",
  ..."éß中😀\u00a0\u2028",
].map((c) => c.codePointAt(0)!);

/**
 * A random string `g` derives from `root`: each choice uniform (`random` in [0, 1)), repetitions
 * short; past `depth` nested rules the choice that ends soonest is taken.
 */
export function sample(g: Ebnf, random: () => number, root = "root", depth = 24): string {
  let height = heightsOf.get(g);
  if (height === undefined) heightsOf.set(g, height = heights(g));
  const h = (n: Node): number => nodeHeight(n, height);
  const out: number[] = [];
  const walk = (n: Node, d: number): void => {
    switch (n.t) {
      case "lit":
        out.push(...n.s);
        return;
      case "cls": {
        if (n.neg) {
          const choices = POOL.filter((c) => c > 0x7f || inClass(n, c));
          out.push(...utf8(choices[Math.floor(random() * choices.length)]!));
          return;
        }
        const choices = n.ranges.flatMap((
          [a, b],
        ) => [a, b, a + Math.floor(random() * (b - a + 1))]);
        out.push(choices[Math.floor(random() * choices.length)]!);
        return;
      }
      case "ref":
        return walk(g.get(n.name)!, d + 1);
      case "seq":
        return n.xs.forEach((x) => walk(x, d));
      case "alt": {
        const ok = n.xs.filter((x) => h(x) < Infinity);
        const pick = d > depth
          ? ok.reduce((a, b) => (h(b) < h(a) ? b : a))
          : ok[Math.floor(random() * ok.length)]!;
        return walk(pick, d);
      }
      case "rep": {
        const extra = d > depth ? 0 : Math.floor(-Math.log(1 - random()) * 1.5);
        const count = Math.min(n.max, n.min + extra);
        for (let k = 0; k < count; k++) walk(n.x, d);
        return;
      }
    }
  };
  walk(g.get(root)!, 0);
  return new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(out));
}

const heightsOf = new WeakMap<Ebnf, Map<string, number>>();

/** Each rule's least derivation height (Infinity: derives nothing finite). */
function heights(g: Ebnf): Map<string, number> {
  const height = new Map<string, number>([...g.keys()].map((k) => [k, Infinity]));
  for (let changed = true; changed;) {
    changed = false;
    for (const [name, body] of g) {
      const v = nodeHeight(body, height) + 1;
      if (v < height.get(name)!) (height.set(name, v), changed = true);
    }
  }
  return height;
}

function nodeHeight(n: Node, height: Map<string, number>): number {
  switch (n.t) {
    case "lit":
    case "cls":
      return 0;
    case "ref":
      return height.get(n.name) ?? Infinity;
    case "seq":
      return Math.max(0, ...n.xs.map((x) => nodeHeight(x, height)));
    case "alt":
      return Math.min(...n.xs.map((x) => nodeHeight(x, height)));
    case "rep":
      return n.min === 0 ? 0 : nodeHeight(n.x, height);
  }
}
