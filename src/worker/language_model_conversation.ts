/**
 * The conversation of one Kiln `LanguageModel` session: its `initialPrompts` (kept for good) and
 * its turns (one per `append`, one per prompt with its reply), as chat messages rendered by the
 * model's chat template; what they take of the context (`contextUsage`), the eviction of the
 * oldest turns when a new input does not fit, and a reply generated through
 * `KilnModel.completions` with the session's sampling.
 */
import type { ChatMessage } from "../text/chat.ts";
import type { ModelText } from "../text/load.ts";
import {
  constraintFormat,
  domError,
  quotaExceeded,
  type Sampling,
} from "./language_model_input.ts";
import type { LanguageModelPromptOptions } from "./language_model_types.ts";
import type { KilnModel } from "./open.ts";

/** How messages are rendered: ending in a new turn, continuing the last message, as they are. */
export type Ending = "turn" | "prefix" | "none";

/** The prompt ids of `messages` through the model's chat template (none for no messages). */
export function encode(text: ModelText, messages: ChatMessage[], ending: Ending): number[] {
  if (messages.length === 0) return [];
  const render = (m: ChatMessage[], turn: boolean) =>
    text.chat.render(m, text.tokenizer.specialTokens, { addGenerationPrompt: turn });
  let rendered = render(messages, ending === "turn");
  if (ending === "prefix") {
    // Continue the reply's start: the render up to the end of its text (the template's
    // end-of-turn after it cut off), or, where the template does not show the text as it is,
    // the rest of the conversation's generation prompt followed by it.
    const start = messages.at(-1)!.content;
    const at = start === "" ? -1 : rendered.lastIndexOf(start);
    rendered = at >= 0
      ? rendered.slice(0, at + start.length)
      : render(messages.slice(0, -1), true) + start;
  }
  return text.tokenizer.encode(rendered, { addSpecial: text.chat.isDefault });
}

/** A session's conversation and how it samples (see the module). */
export class Conversation {
  /** One entry per `append` and per prompt with its reply, oldest first: evicted in turn. */
  #turns: ChatMessage[][];
  #usage: number;

  /**
   * `initial` (never evicted) on `model`; throws `QuotaExceededError` where it does not fit.
   * `turns` and `usage`: a copy's.
   */
  constructor(
    readonly model: KilnModel,
    readonly sampling: Sampling,
    readonly maxTokens: number | undefined,
    readonly initial: readonly ChatMessage[],
    copied?: { turns: ChatMessage[][]; usage: number },
  ) {
    this.#turns = copied?.turns ?? [];
    this.#usage = copied?.usage ?? this.#measureAll();
    if (this.#usage > this.window) {
      throw quotaExceeded(
        `initialPrompts: ${this.#usage} tokens; the context window is ${this.window}`,
        this.#usage,
        this.window,
      );
    }
  }

  /** Tokens the conversation takes (0 when empty). */
  get usage(): number {
    return this.#usage;
  }

  /** The model's context length (unbounded where the engine gives none). */
  get window(): number {
    return this.model.config.context_length ?? Infinity;
  }

  /** Whether anything is in it yet (then a `system` message may not come). */
  get started(): boolean {
    return this.initial.length > 0 || this.#turns.length > 0;
  }

  /** The same conversation, to go on apart. */
  copy(): Conversation {
    return new Conversation(this.model, this.sampling, this.maxTokens, this.initial, {
      turns: this.#turns.map((t) => [...t]),
      usage: this.#usage,
    });
  }

  /** Tokens `messages` take rendered alone. */
  measure(messages: ChatMessage[]): number {
    return encode(this.model.text, messages, "none").length;
  }

  /**
   * The prompt ids of the conversation plus `messages`; where they do not fit (with room for a
   * token of reply, unless `ending` is `none`), the oldest turns are evicted until they do and
   * `overflow` is called, or, where even none left does not fit, a `QuotaExceededError` and
   * nothing evicted.
   */
  fit(messages: ChatMessage[], ending: Ending, overflow: () => void): number[] {
    const limit = ending === "none" ? this.window : this.window - 1;
    const ids = (drop: number) =>
      encode(
        this.model.text,
        [...this.initial, ...this.#turns.slice(drop).flat(), ...messages],
        ending,
      );
    const all = ids(0);
    let kept = all, drop = 0;
    while (kept.length > limit && drop < this.#turns.length) kept = ids(++drop);
    if (kept.length > limit) {
      throw quotaExceeded(
        `the input needs ${all.length} tokens; the context window is ${this.window}`,
        all.length,
        this.window,
      );
    }
    if (drop > 0) {
      this.#turns = this.#turns.slice(drop);
      this.#usage = this.#measureAll();
      overflow();
    }
    return kept;
  }

  /** Add a turn. */
  commit(turn: ChatMessage[]): void {
    this.#turns.push(turn);
    this.#usage = this.#measureAll();
  }

  /**
   * Reply to `messages` (`prefix`: the last is the reply's start, which the reply continues),
   * its new text handed to `emit` as it comes; on success the turn joins the conversation. The
   * reply may take what is left of the context, or `maxTokens`.
   */
  async reply(
    messages: ChatMessage[],
    prefix: boolean,
    options: LanguageModelPromptOptions,
    signal: AbortSignal,
    overflow: () => void,
    emit?: (text: string) => void,
  ): Promise<string> {
    const format = constraintFormat(options.responseConstraint);
    const ids = this.fit(messages, prefix ? "prefix" : "turn", overflow);
    const room = this.window - ids.length;
    const stream = await this.model.completions.create({
      prompt: ids,
      max_tokens: Math.min(room, this.maxTokens ?? room),
      temperature: this.sampling.temperature,
      top_k: this.sampling.topK,
      stream: true,
      ...(format ? { response_format: format } : {}),
    }, { signal });
    let reply = "", finish: string | null | undefined;
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (c?.text) {
        reply += c.text;
        emit?.(c.text);
      }
      finish = c?.finish_reason ?? finish;
    }
    if (signal.aborted) throw signal.reason;
    if (finish === "cancelled") throw domError("UnknownError", "the engine cancelled the reply");
    const start = prefix ? messages.at(-1)!.content : undefined;
    this.commit(
      start === undefined
        ? [...messages, { role: "assistant", content: reply }]
        : [...messages.slice(0, -1), { role: "assistant", content: start + reply }],
    );
    return reply;
  }

  #measureAll(): number {
    return this.measure([...this.initial, ...this.#turns.flat()]);
  }
}
