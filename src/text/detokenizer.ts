/**
 * Streaming text from streaming token ids. A token's text can depend on its neighbours
 * (SentencePiece drops the leading space of the first token decoded; byte-level and byte
 * fallback tokens can stop inside a UTF-8 character), so each new piece is decoded together
 * with a few tokens before it and only the text past the earlier decode is emitted, and nothing
 * is emitted while the text ends in an incomplete character (U+FFFD).
 */
import type { TextTokenizer } from "./tokenizer.ts";

/** Prompt tokens decoded as context before the first output token. */
const CONTEXT = 5;

/** Turns a stream of token ids into a stream of complete UTF-8 text pieces. */
export class IncrementalDetokenizer {
  readonly #ids: number[];
  #prefix: number;
  #read: number;

  /**
   * A detokenizer whose first piece is decoded after the last tokens of `prompt`.
   *
   * @param tokenizer Decodes the ids.
   * @param prompt The prompt's ids; its last 5 serve as context.
   * @param options `skipSpecial`: leave special tokens out of the text.
   */
  constructor(
    readonly tokenizer: TextTokenizer,
    prompt: readonly number[] = [],
    readonly options: { skipSpecial?: boolean } = {},
  ) {
    this.#ids = prompt.slice(-CONTEXT);
    this.#prefix = 0;
    this.#read = this.#ids.length;
  }

  #decode(from: number, to?: number): string {
    return this.tokenizer.decode(this.#ids.slice(from, to), this.options);
  }

  /** Add output tokens; returns the text they complete (possibly ""). */
  push(ids: readonly number[]): string {
    this.#ids.push(...ids);
    const before = this.#decode(this.#prefix, this.#read);
    const now = this.#decode(this.#prefix);
    if (now.length <= before.length || now.endsWith("\uFFFD")) return "";
    this.#prefix = this.#read;
    this.#read = this.#ids.length;
    return now.slice(before.length);
  }

  /** At the end of the stream: whatever text is still held (an incomplete character included). */
  flush(): string {
    const before = this.#decode(this.#prefix, this.#read);
    const now = this.#decode(this.#prefix);
    this.#prefix = this.#read = this.#ids.length;
    return now.length > before.length ? now.slice(before.length) : "";
  }
}
