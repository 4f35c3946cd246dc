/**
 * Whether a grammar accepts any finite string at all: a grammar whose start rule can only
 * recurse (`root ::= "a" root`) lets a sequence run until `max_tokens` with no way to end, so
 * it is refused before it runs.
 *
 * The check reads XGrammar's normalized form of the compiled grammar (`Grammar.toString()`:
 * one `name ::= body` line per rule; bodies of strings, character classes, rule names,
 * parentheses, `|`, postfix `*` `+` `?` `{m,n}`, lookaheads `(= ...)`) and computes the rules
 * that derive some finite string (the textbook "productive" fixpoint: a rule is productive when
 * one of its alternatives is a sequence of productive items; strings, character classes,
 * repetitions that may be empty and lookaheads are). A form it cannot read answers `undefined`
 * (unknown), and nothing is refused on that ground.
 */

type Node =
  | { t: "leaf" }
  | { t: "ref"; name: string }
  | { t: "alt"; of: Node[][] };

/** Whether `root` derives a finite string; undefined when the text could not be read. */
export function derivesFiniteString(normalized: string, root = "root"): boolean | undefined {
  const rules = new Map<string, Node>();
  try {
    for (const line of normalized.split("\n")) {
      if (line.trim() === "") continue;
      const m = /^([A-Za-z_][\w-]*) ::= (.*)$/.exec(line);
      if (!m) return undefined;
      rules.set(m[1]!, new Parser(m[2]!).whole());
    }
  } catch {
    return undefined;
  }
  if (!rules.has(root)) return undefined;
  const done = new Set<string>();
  const ok = (n: Node): boolean =>
    n.t === "leaf" || (n.t === "ref" ? done.has(n.name) : n.of.some((seq) => seq.every(ok)));
  for (let changed = true; changed;) {
    changed = false;
    for (const [name, body] of rules) {
      if (!done.has(name) && ok(body)) {
        done.add(name);
        changed = true;
      }
    }
  }
  return done.has(root);
}

const LEAF: Node = { t: "leaf" };

class Parser {
  #i = 0;
  constructor(readonly s: string) {}

  whole(): Node {
    const n = this.alt();
    this.#space();
    if (this.#i !== this.s.length) throw new Error(`unread text at ${this.#i}`);
    return n;
  }

  alt(): Node {
    const of: Node[][] = [this.seq()];
    while (this.#eat("|")) of.push(this.seq());
    return { t: "alt", of };
  }

  seq(): Node[] {
    const items: Node[] = [];
    for (;;) {
      this.#space();
      const c = this.s[this.#i];
      if (c === undefined || c === ")" || c === "|") return items;
      let item = this.atom();
      for (;;) {
        const p = this.s[this.#i];
        if (p === "*" || p === "?") {
          this.#i++;
          item = LEAF;
        } else if (p === "+") {
          this.#i++;
        } else if (p === "{") {
          const m = /^\{(\d+)(,\d*)?\}/.exec(this.s.slice(this.#i));
          if (!m) throw new Error("bad repetition");
          this.#i += m[0].length;
          if (m[1] === "0") item = LEAF;
        } else break;
      }
      items.push(item);
    }
  }

  atom(): Node {
    const s = this.s, c = s[this.#i];
    if (c === '"' || c === "[") {
      const close = c === '"' ? '"' : "]";
      for (this.#i++; s[this.#i] !== close; this.#i++) {
        if (this.#i >= s.length) throw new Error("unclosed");
        if (s[this.#i] === "\\") this.#i++;
      }
      this.#i++;
      return LEAF;
    }
    if (c === "(") {
      this.#i++;
      const look = s[this.#i] === "=";
      if (look) this.#i++;
      const inner = this.alt();
      if (!this.#eat(")")) throw new Error("unclosed (");
      return look ? LEAF : inner;
    }
    const m = /^[A-Za-z_][\w-]*/.exec(s.slice(this.#i));
    if (!m) throw new Error(`unexpected ${c}`);
    this.#i += m[0].length;
    return { t: "ref", name: m[0] };
  }

  #space(): void {
    while (this.s[this.#i] === " ") this.#i++;
  }

  #eat(c: string): boolean {
    this.#space();
    if (this.s[this.#i] !== c) return false;
    this.#i++;
    return true;
  }
}
