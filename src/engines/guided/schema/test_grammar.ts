/**
 * For tests: EBNF grammars compiled by XGrammar over a vocabulary of the 256 single bytes (token
 * `b` is byte `b`, byte-level encoded) and a stop token (256), so a text's membership is asked of
 * XGrammar's own matcher one UTF-8 byte at a time, and an enumeration walks a trie of texts with
 * rollbacks instead of starting each text afresh.
 */
import {
  loadXGrammar,
  withLibraryErrors,
  type XCompiler,
  type XGrammar,
  type XMatcher,
} from "../xgrammar.ts";

const STOP = 256;
const encoder = new TextEncoder();

let compiler: Promise<{ xg: XGrammar; c: XCompiler }> | undefined;

/** One library (each `loadXGrammar` makes a new one) and its compiler over the bytes. */
function byteCompiler(): Promise<{ xg: XGrammar; c: XCompiler }> {
  return compiler ??= (async () => {
    const xg = await loadXGrammar();
    const printable = (b: number) =>
      (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    const vocab: string[] = [];
    let next = 0x100;
    for (let b = 0; b < 256; b++) vocab.push(String.fromCodePoint(printable(b) ? b : next++));
    vocab.push("");
    const info = await xg.TokenizerInfo.createTokenizerInfo(vocab, "byte_level", false, 257, [
      STOP,
    ]);
    return { xg, c: await xg.GrammarCompiler.createGrammarCompiler(info, false) };
  })();
}

/** A grammar's matcher, asked about texts. */
export class ByteMatcher {
  #depth = 0;

  constructor(readonly matcher: XMatcher) {}

  /** Accept `text`'s bytes: true, or false (and nothing accepted) when one is refused. */
  push(text: string): boolean {
    const bytes = encoder.encode(text);
    for (let i = 0; i < bytes.length; i++) {
      if (!this.matcher.acceptToken(bytes[i]!)) {
        if (i > 0) this.matcher.rollBack(i);
        return false;
      }
    }
    this.#depth += bytes.length;
    return true;
  }

  /** Undo the last `push` of `text` (which was accepted). */
  pop(text: string): void {
    const n = encoder.encode(text).length;
    if (n > 0) this.matcher.rollBack(n);
    this.#depth -= n;
  }

  /** Whether the grammar may end after what was pushed. */
  complete(): boolean {
    if (!this.matcher.acceptToken(STOP)) return false;
    this.matcher.rollBack(1);
    return true;
  }

  /** The bytes the grammar allows next, and whether it may end here. */
  async next(): Promise<{ bytes: number[]; end: boolean }> {
    const mask = await this.matcher.getNextTokenBitmask();
    const bytes: number[] = [];
    for (let b = 0; b < 256; b++) if ((mask[b >> 5]! >>> (b & 31)) & 1) bytes.push(b);
    return { bytes, end: ((mask[STOP >> 5]! >>> (STOP & 31)) & 1) === 1 };
  }

  /** Whether the grammar accepts exactly `text` (from the start). */
  accepts(text: string): boolean {
    if (this.#depth > 0) this.matcher.rollBack(this.#depth), this.#depth = 0;
    if (!this.push(text)) return false;
    const ok = this.complete();
    this.pop(text);
    return ok;
  }

  dispose(): void {
    this.matcher.dispose();
  }
}

/** `ebnf` (root rule `root`) compiled by XGrammar, with a matcher; XGrammar's refusal thrown. */
export async function byteMatcher(ebnf: string): Promise<ByteMatcher> {
  const { xg, c } = await byteCompiler();
  const compiled = await withLibraryErrors(() => c.compileGrammar(ebnf, "root"));
  const matcher = await xg.GrammarMatcher.createGrammarMatcher(compiled, [STOP], false, -1);
  compiled.dispose();
  return new ByteMatcher(matcher);
}

/**
 * Every string over `alphabet` (code points) of up to `depth` of them, visited depth-first with
 * whether the grammar accepts `wrap(s)`'s text; `encode(c)` is one code point's text and the
 * matcher follows the texts through the trie (a prefix it refuses is not pushed further, its
 * extensions visited as refused).
 */
export function walkStrings(
  m: ByteMatcher,
  alphabet: readonly string[],
  depth: number,
  open: string,
  encode: (c: string) => string,
  close: string,
  visit: (s: string, accepted: boolean) => void,
): void {
  m.accepts(""); // back to the start
  const live = m.push(open);
  const go = (s: string, alive: boolean, left: number) => {
    let ok = false;
    if (alive && m.push(close)) ok = m.complete(), m.pop(close);
    visit(s, ok);
    if (left === 0) return;
    for (const c of alphabet) {
      const t = encode(c);
      const pushed = alive && m.push(t);
      go(s + c, pushed, left - 1);
      if (pushed) m.pop(t);
    }
  };
  go("", live, depth);
  if (live) m.pop(open);
}

/**
 * Every text over `alphabet` of up to `depth` pieces that the grammar accepts (it follows only
 * the prefixes the grammar allows), passed to `visit`.
 */
export function walkAccepted(
  m: ByteMatcher,
  alphabet: readonly string[],
  depth: number,
  visit: (text: string) => void,
): void {
  m.accepts("");
  const go = (text: string, left: number) => {
    if (m.complete()) visit(text);
    if (left === 0) return;
    for (const c of alphabet) {
      if (!m.push(c)) continue;
      go(text + c, left - 1);
      m.pop(c);
    }
  };
  go("", depth);
}

/**
 * Every prefix the grammar allows, over `alphabet`, up to `depth` pieces, visited (awaited)
 * with what may follow it: for checks that hold in every state (no dead end, no raw control).
 */
export async function walkStates(
  m: ByteMatcher,
  alphabet: readonly string[],
  depth: number,
  visit: (text: string, next: { bytes: number[]; end: boolean }) => void,
): Promise<void> {
  m.accepts("");
  const go = async (text: string, left: number) => {
    visit(text, await m.next());
    if (left === 0) return;
    for (const c of alphabet) {
      if (!m.push(c)) continue;
      await go(text + c, left - 1);
      m.pop(c);
    }
  };
  await go("", depth);
}
