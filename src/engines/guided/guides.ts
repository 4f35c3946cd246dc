/**
 * Guided decoding for an engine: `sampling_options.guided_decoding` compiled by XGrammar over
 * the model's vocabulary, one {@linkcode GrammarGuide} per request.
 *
 * XGrammar runs in a grammar worker of its own (see `grammar_client.ts`), started on the first
 * guided request, with the model's tokenizer read once here: each token as its bytes in the
 * byte-level alphabet (whatever the tokenizer's own kind), special tokens and ids past the
 * tokenizer's (padding of the model's vocabulary) as empty strings, which XGrammar never allows,
 * except the request's stop tokens once the grammar is complete.
 *
 * Compiled grammars are cached by the canonical text of `guided_decoding` (the least recently
 * used dropped past `capacity`); refused ones are remembered the same way and refused again at
 * once. Compiling is asynchronous and happens before the request is admitted, never in an
 * engine's step loop. A constraint past the size limits is refused before it is compiled; one
 * whose compile fails in XGrammar or runs past the time budget is refused by name, and the
 * requests whose matchers shared the worker carry on (see `docs/guided_decoding.md`, Faults and
 * budgets).
 */
import { EngineError } from "../../contract/errors.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import { maskWords } from "../../gpu/token_mask_bits.ts";
import type { TextTokenizer } from "../../text/tokenizer.ts";
import { GrammarClient, type GrammarCounts, GrammarFailure } from "./grammar_client.ts";
import { PROBE, type VocabInit } from "./grammar_protocol.ts";
import { grammarWorker } from "./grammar_worker_module.ts";
import { checkSize, type GuidedLimits, guidedLimits } from "./limits.ts";
import { GrammarGuide, RemoteMatcher } from "./matcher.ts";
import { FIELD, type GuideSpec, parseGuided, specKey } from "./options.ts";

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

interface Vocabulary {
  init: VocabInit;
  /** `noControl` of {@linkcode vocabulary}. */
  json: Uint32Array;
}

/** The time the last compile took, and whether it came from the cache (for benches). */
export interface CompileReport {
  ms: number;
  cached: boolean;
}

/** Text (chars) past which a constraint's checks on the engine's thread yield between them. */
const LARGE_CHARS = 1 << 16;

/** A turn of the event loop later (a macrotask: what is waiting to run runs first). */
const nextTurn = () => new Promise<void>((r) => setTimeout(r, 0));

/** Milliseconds a grammar worker may take to start XGrammar over the vocabulary. */
const INIT_TIMEOUT_MS = 120_000;

/** The guided side of one engine: its grammar worker, compiled grammars, refusals. */
export class Guides {
  #vocab: Promise<Vocabulary> | undefined;
  readonly #client: GrammarClient;
  readonly #refused = new Map<string, EngineError>();
  readonly limits: Required<GuidedLimits>;

  /**
   * `tokenizer`: loads the model's tokenizer (called once); `vocab`: the model's vocabulary
   * size (its logits' width), at least the tokenizer's in general; `capacity`: compiled
   * grammars kept; `limits`: the budgets (see {@linkcode GuidedLimits}).
   */
  constructor(
    readonly tokenizer: () => Promise<TextTokenizer>,
    readonly vocab: number,
    capacity?: number,
    limits: GuidedLimits = {},
  ) {
    this.limits = guidedLimits(
      capacity === undefined ? limits : { ...limits, cacheCapacity: capacity },
    );
    this.#client = new GrammarClient(async () => (await this.#vocabulary()).init, {
      spawn: this.limits.worker ? grammarWorker : () => undefined,
      timeoutMs: this.limits.compileTimeoutMs,
      initTimeoutMs: INIT_TIMEOUT_MS,
      capacity: this.limits.cacheCapacity,
    });
  }

  /** The last compile (from the cache or not) and how long it took. */
  get lastCompile(): CompileReport | undefined {
    return this.#client.lastCompile;
  }

  /** What went wrong in XGrammar so far (faults, timeouts, restarts, rebuilds). */
  get counts(): Readonly<GrammarCounts> {
    return this.#client.counts;
  }

  #vocabulary(): Promise<Vocabulary> {
    return this.#vocab ??= (async () => {
      const tok = await this.tokenizer();
      const eos = [...tok.eosTokenIds].filter((t) => t < this.vocab);
      const { encoded, noControl } = vocabulary(tok, this.vocab);
      return { init: { encoded, size: this.vocab, eos }, json: noControl };
    })().catch((e) => {
      this.#vocab = undefined;
      throw new EngineError("Unknown", `guided decoding: the tokenizer did not load: ${e}`, {
        cause: e,
      });
    });
  }

  /**
   * The provider of `request`'s masks, or undefined when it is not guided. Bad options, a
   * constraint past the size limits, one XGrammar refuses or fails on or that takes longer
   * than the time budget to compile, or one that accepts no finite string, are
   * `InvalidArgument` naming the option.
   */
  async guide(request: PreprocessedRequest): Promise<GrammarGuide | undefined> {
    const g = request.sampling_options.guided_decoding;
    if (g === undefined || g === null) return undefined;
    const spec = parseGuided(g);
    // A large constraint's checks take a few ms each on this (the engine's) thread: they take
    // turns with the step loop.
    const large = checkSize(spec, this.limits) > LARGE_CHARS;
    if (large) await nextTurn();
    const key = specKey(spec);
    this.#refusedBefore(key);
    if (large) await nextTurn();
    const { json } = await this.#vocabulary();
    const stop = request.stop_conditions;
    // The tokens the sequence ends on: the grammar's end allows them (and only it does).
    const stops = [
      ...(stop.ignore_eos ? [] : request.eos_token_ids),
      ...(stop.stop_token_ids ?? []),
      ...(stop.stop_token_ids_hidden ?? []),
    ].filter((t) => t < this.vocab);
    // With no stop token, the matcher ends with the grammar: the mask after it allows nothing.
    const matcher = new RemoteMatcher(this.#client, key, spec, [...new Set(stops)], !stops.length);
    try {
      await matcher.build(true);
    } catch (e) {
      throw this.#refusal(key, spec, e);
    }
    const field = `${FIELD}.${spec.key}`;
    return new GrammarGuide(
      matcher,
      maskWords(this.vocab),
      field,
      spec.key === "json" ? json : undefined,
    );
  }

  /** `spec` compiled (from the cache when it was compiled lately); refusals as in `guide`. */
  async compile(spec: GuideSpec): Promise<void> {
    checkSize(spec, this.limits);
    const key = specKey(spec);
    this.#refusedBefore(key);
    try {
      await this.#client.grammar(key, spec, PROBE);
    } catch (e) {
      throw this.#refusal(key, spec, e);
    }
  }

  /** End the grammar worker (the engine is shutting down). */
  close(): void {
    this.#client.close();
  }

  /** Throw again, at once, what `key` was refused with before. */
  #refusedBefore(key: string): void {
    const known = this.#refused.get(key);
    if (known === undefined) return;
    this.#refused.delete(key); // most recent last
    this.#refused.set(key, known);
    throw new EngineError(known.type, known.message, { param: known.param! });
  }

  /** `e`, the failure of `spec`'s first compile or matcher, as the request's error. */
  #refusal(key: string, spec: GuideSpec, e: unknown): EngineError {
    if (!(e instanceof GrammarFailure)) return EngineError.from(e);
    const field = `${FIELD}.${spec.key}`;
    let error: EngineError;
    switch (e.kind) {
      case "fault":
        error = EngineError.invalidField(
          field,
          e.reason !== undefined
            ? `refused by XGrammar: ${plain(e.reason)}`
            : "the grammar library failed on this constraint",
        );
        break;
      case "timeout":
        error = EngineError.invalidField(
          field,
          `compiling it took longer than the ${this.limits.compileTimeoutMs} ms allowed`,
        );
        break;
      case "refused":
        error = EngineError.invalidField(field, e.message);
        break;
      case "infinite":
        error = EngineError.invalidField(
          field,
          "accepts no finite string (its root rule can never end), so the output could never end",
        );
        break;
      default:
        return new EngineError("Unknown", `${field}: ${e.message}`);
    }
    this.#refused.set(key, error);
    while (this.#refused.size > this.limits.refusedCapacity) {
      this.#refused.delete(this.#refused.keys().next().value!);
    }
    return error;
  }
}

/** XGrammar's reason, printable and at most 400 characters. */
function plain(reason: string): string {
  const text = Array.from(reason, (c) => c < " " || c === "\x7f" ? " " : c).join("").trim();
  return text.length > 400 ? `${text.slice(0, 400)}...` : text;
}
