/**
 * Guided decoding for an engine: `sampling_options.guided_decoding` compiled by XGrammar over
 * the model's vocabulary, one {@linkcode GrammarGuide} per request.
 *
 * Everything is loaded on the first guided request, once: XGrammar (see `xgrammar.ts`), the
 * model's tokenizer, and XGrammar's `TokenizerInfo` over the model's vocabulary: each token as
 * its bytes in the byte-level alphabet (whatever the tokenizer's own kind), special tokens and
 * ids past the tokenizer's (padding of the model's vocabulary) as empty strings, which XGrammar
 * never allows, except the request's stop tokens once the grammar is complete.
 *
 * Compiled grammars are cached by the canonical text of `guided_decoding` (the least recently
 * used dropped past `capacity`); compiling is asynchronous and happens before the request is
 * admitted, never in an engine's step loop.
 */
import { EngineError } from "../../contract/errors.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import { maskWords } from "../../gpu/reference/token_mask.ts";
import type { TextTokenizer } from "../../text/tokenizer.ts";
import { GrammarGuide } from "./matcher.ts";
import { choiceGrammar, FIELD, type GuideSpec, parseGuided, specKey } from "./options.ts";
import { derivesFiniteString } from "./productive.ts";
import {
  loadXGrammar,
  withLibraryErrors,
  type XCompiledGrammar,
  type XCompiler,
  type XGrammar,
} from "./xgrammar.ts";

/** GPT-2's byte-level alphabet: byte → the character that stands for it. */
function byteLevelChars(): string[] {
  const printable = (b: number) =>
    (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const chars: string[] = [];
  let next = 0x100;
  for (let b = 0; b < 256; b++) chars.push(String.fromCodePoint(printable(b) ? b : next++));
  return chars;
}

/**
 * The model's vocabulary, each token's bytes read once: as XGrammar's byte-level
 * `encoded_vocab` (special tokens and ids past the tokenizer's as ""), and as `noControl`, a mask
 * of the tokens with no raw control character (bytes 0x00 to 0x1f), bit set. JSON allows those
 * only escaped inside strings, or as whitespace, which Kiln's compact JSON has none of; yet
 * XGrammar's rule for a length-bounded string lets them through (`[^"\\\r\n]{0,n}`: ~1% of
 * sampled completions did not parse), so JSON masks are ANDed with `noControl`.
 */
export function vocabulary(
  tokenizer: TextTokenizer,
  vocab: number,
): { encoded: string[]; noControl: Uint32Array } {
  const chars = byteLevelChars();
  const n = Math.min(vocab, tokenizer.vocabSize);
  const encoded: string[] = new Array(n);
  const noControl = new Uint32Array(maskWords(vocab)).fill(0xffffffff);
  for (let id = 0; id < n; id++) {
    if (tokenizer.isSpecial(id)) {
      encoded[id] = "";
      continue;
    }
    const bytes = tokenizer.tokenBytes(id);
    encoded[id] = Array.from(bytes, (b) => chars[b]!).join("");
    if (bytes.some((b) => b < 0x20)) noControl[id >>> 5]! &= ~(1 << (id & 31));
  }
  return { encoded, noControl };
}

interface Loaded {
  xg: XGrammar;
  compiler: XCompiler;
  eos: readonly number[];
  /** `noControl` of {@linkcode vocabulary}. */
  json: Uint32Array;
}

/** The time the last compile took, and whether it came from the cache (for benches). */
export interface CompileReport {
  ms: number;
  cached: boolean;
}

export class Guides {
  #loaded: Promise<Loaded> | undefined;
  readonly #cache = new Map<string, Promise<XCompiledGrammar>>();
  readonly #pinned = new Map<XCompiledGrammar, number>();
  readonly #evicted = new Set<XCompiledGrammar>();
  lastCompile: CompileReport | undefined;

  /**
   * `tokenizer`: loads the model's tokenizer (called once); `vocab`: the model's vocabulary
   * size (its logits' width), at least the tokenizer's in general.
   */
  constructor(
    readonly tokenizer: () => Promise<TextTokenizer>,
    readonly vocab: number,
    readonly capacity = 64,
  ) {}

  #load(): Promise<Loaded> {
    return this.#loaded ??= (async () => {
      const [xg, tok] = await Promise.all([loadXGrammar(), this.tokenizer()]);
      const eos = [...tok.eosTokenIds].filter((t) => t < this.vocab);
      const { encoded, noControl } = vocabulary(tok, this.vocab);
      const info = await xg.TokenizerInfo.createTokenizerInfo(
        encoded,
        "byte_level",
        false,
        this.vocab,
        eos,
      );
      const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, true);
      return { xg, compiler, eos, json: noControl };
    })().catch((e) => {
      this.#loaded = undefined;
      throw new EngineError("Unknown", `guided decoding: XGrammar did not load: ${e}`, {
        cause: e,
      });
    });
  }

  /**
   * The provider of `request`'s masks, or undefined when it is not guided. Bad options, or a
   * schema, regex or grammar XGrammar refuses or that accepts no finite string, are
   * `InvalidArgument` naming the option.
   */
  async guide(request: PreprocessedRequest): Promise<GrammarGuide | undefined> {
    const g = request.sampling_options.guided_decoding;
    if (g === undefined || g === null) return undefined;
    const spec = parseGuided(g);
    await this.#load();
    const compiled = await this.compile(spec);
    // Pinned until its matcher exists: evicted from the cache meanwhile, it is disposed after.
    this.#pinned.set(compiled, (this.#pinned.get(compiled) ?? 0) + 1);
    try {
      return await this.#guide(request, spec, compiled);
    } finally {
      const n = this.#pinned.get(compiled)! - 1;
      if (n > 0) this.#pinned.set(compiled, n);
      else {
        this.#pinned.delete(compiled);
        if (this.#evicted.delete(compiled)) compiled.dispose();
      }
    }
  }

  async #guide(
    request: PreprocessedRequest,
    spec: GuideSpec,
    compiled: XCompiledGrammar,
  ): Promise<GrammarGuide> {
    const { xg, json } = await this.#load();
    const stop = request.stop_conditions;
    // The tokens the sequence ends on: the grammar's end allows them (and only it does).
    const stops = [
      ...(stop.ignore_eos ? [] : request.eos_token_ids),
      ...(stop.stop_token_ids ?? []),
      ...(stop.stop_token_ids_hidden ?? []),
    ].filter((t) => t < this.vocab);
    // With no stop token, the matcher ends with the grammar: the mask after it allows nothing.
    const matcher = await xg.GrammarMatcher.createGrammarMatcher(
      compiled,
      stops.length > 0 ? [...new Set(stops)] : undefined,
      stops.length === 0,
      -1,
    );
    const field = `${FIELD}.${spec.key}`;
    return new GrammarGuide(
      matcher,
      maskWords(this.vocab),
      field,
      spec.key === "json" ? json : undefined,
    );
  }

  /** `spec` compiled (from the cache when it was compiled lately). */
  compile(spec: GuideSpec): Promise<XCompiledGrammar> {
    const key = specKey(spec);
    const hit = this.#cache.get(key);
    if (hit !== undefined) {
      this.#cache.delete(key); // most recently used last
      this.#cache.set(key, hit);
      this.lastCompile = { ms: 0, cached: true };
      return hit;
    }
    const t0 = performance.now();
    const compiled = this.#compile(spec).then((c) => {
      this.lastCompile = { ms: performance.now() - t0, cached: false };
      return c;
    });
    this.#cache.set(key, compiled);
    compiled.catch(() => this.#cache.get(key) === compiled && this.#cache.delete(key));
    while (this.#cache.size > this.capacity) {
      const [oldest, p] = this.#cache.entries().next().value!;
      this.#cache.delete(oldest);
      p.then((c) => this.#pinned.has(c) ? this.#evicted.add(c) : c.dispose(), () => {});
    }
    return compiled;
  }

  async #compile(spec: GuideSpec): Promise<XCompiledGrammar> {
    const { compiler } = await this.#load();
    const field = `${FIELD}.${spec.key}`;
    let compiled: XCompiledGrammar;
    try {
      compiled = await withLibraryErrors(() => {
        switch (spec.key) {
          case "json":
            return compiler.compileJSONSchema(spec.schema ?? "{}", false, -1, [", ", ": "], true);
          case "regex":
            return compiler.compileStructuralTag({
              type: "structural_tag",
              format: { type: "regex", pattern: spec.pattern },
            });
          case "choice":
            return compiler.compileGrammar(choiceGrammar(spec.choices), "root");
          case "grammar":
            return compiler.compileGrammar(spec.ebnf, "root");
        }
      });
    } catch (e) {
      throw EngineError.invalidField(field, `refused by XGrammar: ${(e as Error).message}`, e);
    }
    const grammar = compiled.grammar();
    const finite = derivesFiniteString(grammar.toString());
    grammar.dispose();
    if (finite === false) {
      compiled.dispose();
      throw EngineError.invalidField(
        field,
        "accepts no finite string (its root rule can never end), so the output could never end",
      );
    }
    return compiled;
  }
}
