/**
 * Reasoning in a model's output, read per the convention its chat template teaches: one reader
 * per convention, found by a marker in the template's text, that turns text pieces into
 * reasoning and content. `<think>`…`</think>` (Qwen3, SmolLM3, DeepSeek-R1 and their kin, also
 * when the template's generation prompt opens the block itself) and gpt-oss's harmony channels
 * (`analysis` is reasoning; `final` and other channels are content). Markers cut by the stream
 * are held back until they are decided, so reading a reply whole or cut anywhere gives the same
 * reasoning and content.
 */

/** What one piece of text held: reasoning and content to show. */
export interface ReasoningStep {
  /** Text of the model's reasoning. */
  reasoning: string;
  /** Text of its answer. */
  content: string;
}

/**
 * Where a reader is: inside reasoning, in the answer, or not yet known (the text read so far may
 * still open either: a marker is pending, or a channel's header is being read).
 */
export type ReasoningMode = "reasoning" | "content" | "undecided";

/**
 * How the prompt left the reply: `open` (the reply may open a reasoning block), `inside` (the
 * generation prompt opened one: the reply starts in reasoning) or `closed` (the prompt already
 * holds the reply's reasoning, empty when thinking is switched off: the reply is all content).
 */
export type ReplyStart = "open" | "inside" | "closed";

/** Reads one reply piece by piece: `push` each piece of text, `finish` at its end. */
export interface ReasoningReader {
  /** Where the reader is after the text read so far. */
  readonly mode: ReasoningMode;
  /** Read the next piece of text. */
  push(text: string): ReasoningStep;
  /** The end of the reply (the model's, or a cut): what was held back is given out. */
  finish(): ReasoningStep;
}

/** How one family of chat templates writes reasoning into the output. */
export interface ReasoningConvention {
  /** The convention's name, as the documentation calls it (`think`, `harmony`). */
  readonly name: string;
  /** Text whose presence in a chat template marks the convention. */
  readonly marker: string;
  /** How the prompt, whose text ends with `tail`, left the reply. */
  start(tail: string): ReplyStart;
  /** A reader for one reply that starts as `start` says. */
  reader(start: ReplyStart): ReasoningReader;
}

/** The length of the longest suffix of `text` that is a proper prefix of one of `markers`. */
function pendingMarker(text: string, markers: readonly string[]): number {
  let best = 0;
  for (const m of markers) {
    for (let k = Math.min(m.length - 1, text.length); k > best; k--) {
      if (text.endsWith(m.slice(0, k))) {
        best = k;
        break;
      }
    }
  }
  return best;
}

const leadingSpace = (s: string) => s.length - s.trimStart().length;

type TagState = "open" | "reasoning" | "after" | "content";

/** A reader that holds the text it cannot decide yet and reads it again on each push and at the end. */
abstract class HeldReader implements ReasoningReader {
  /** Text pushed and not yet given out. */
  protected held = "";

  abstract get mode(): ReasoningMode;

  push(text: string): ReasoningStep {
    this.held += text;
    return this.read(false);
  }

  finish(): ReasoningStep {
    return this.read(true);
  }

  /** Give out what the held text decides; `end`: no more text comes. */
  protected abstract read(end: boolean): ReasoningStep;
}

/**
 * Reasoning between a start and an end tag at the head of the reply. A reply that does not open
 * with the start tag (whitespace first allowed) is all content. The whitespace at the edges of
 * the reasoning and before the answer is the template's layout, not text: it is dropped. A reply
 * that ends inside the reasoning (cut by `max_tokens`, or never closed) is all reasoning.
 */
class TaggedReader extends HeldReader {
  #state: TagState;
  #thought = false;

  constructor(readonly open: string, readonly close: string, start: ReplyStart) {
    super();
    this.#state = start === "inside" ? "reasoning" : start === "closed" ? "content" : "open";
  }

  get mode(): ReasoningMode {
    return this.#state === "open"
      ? "undecided"
      : this.#state === "reasoning"
      ? "reasoning"
      : "content";
  }

  /** Give out reasoning text: its leading whitespace dropped until some reasoning came. */
  #think(step: ReasoningStep, text: string): void {
    const t = this.#thought ? text : text.trimStart();
    step.reasoning += t;
    this.#thought ||= t !== "";
  }

  protected read(end: boolean): ReasoningStep {
    const step: ReasoningStep = { reasoning: "", content: "" };
    for (;;) {
      const held = this.held;
      switch (this.#state) {
        case "open": {
          const rest = held.slice(leadingSpace(held));
          if (rest.startsWith(this.open)) {
            this.held = rest.slice(this.open.length);
            this.#state = "reasoning";
          } else if (!end && this.open.startsWith(rest)) return step;
          else this.#state = "content";
          break;
        }
        case "reasoning": {
          const at = held.indexOf(this.close);
          if (at < 0 && end) {
            this.#think(step, held.trimEnd());
            this.held = "";
            return step;
          }
          if (at < 0) {
            // Hold a marker cut by the stream, and whitespace that may end the reasoning.
            const keep = held.slice(0, held.length - pendingMarker(held, [this.close]));
            this.#think(step, keep.trimEnd());
            this.held = held.slice(keep.trimEnd().length);
            return step;
          }
          this.#think(step, held.slice(0, at).trimEnd());
          this.held = held.slice(at + this.close.length);
          this.#state = "after";
          break;
        }
        case "after": {
          const i = leadingSpace(held);
          this.held = held.slice(i);
          if (i === held.length) return step;
          this.#state = "content";
          break;
        }
        case "content":
          step.content += held;
          this.held = "";
          return step;
      }
    }
  }
}

const START = "<|start|>", CHANNEL = "<|channel|>", MESSAGE = "<|message|>";
/** What ends a harmony message: consumed, or (a new header) left to be read. */
const MESSAGE_ENDS = ["<|end|>", "<|return|>", "<|call|>"];
const HEADER_OPENS = [START, CHANNEL];
const BODY_ENDS = [...MESSAGE_ENDS, ...HEADER_OPENS];
/** A header longer than this is not one: its text is content. */
const MAX_HEADER = 1024;
/** The harmony channel whose messages are reasoning. */
const ANALYSIS = "analysis";

/**
 * gpt-oss's harmony messages: `<|channel|>NAME<|message|>TEXT<|end|>`, later ones opened by
 * `<|start|>assistant`. `analysis` messages are reasoning; the others (`final`, `commentary`)
 * are content; headers and end markers are neither. Text that does not open a header is content.
 * A header cut by the end of the reply is dropped.
 */
class HarmonyReader extends HeldReader {
  /** The open message's channel, or undefined while a header is read. */
  #channel: string | undefined;

  constructor(start: ReplyStart) {
    super();
    if (start !== "open") this.#channel = start === "inside" ? ANALYSIS : "final";
  }

  get mode(): ReasoningMode {
    return this.#channel === undefined
      ? "undecided"
      : this.#channel === ANALYSIS
      ? "reasoning"
      : "content";
  }

  #body(step: ReasoningStep, text: string): void {
    if (this.#channel === ANALYSIS) step.reasoning += text;
    else step.content += text;
  }

  protected read(end: boolean): ReasoningStep {
    const step: ReasoningStep = { reasoning: "", content: "" };
    while (this.held !== "") {
      const held = this.held;
      if (this.#channel === undefined) {
        const header = HEADER_OPENS.some((m) => held.startsWith(m) || m.startsWith(held));
        const at = held.indexOf(MESSAGE);
        if (!header || (at < 0 && held.length > MAX_HEADER)) this.#channel = "final";
        else if (at >= 0) {
          this.#channel = channelOf(held.slice(0, at));
          this.held = held.slice(at + MESSAGE.length);
        } else {
          if (end) this.held = "";
          return step;
        }
        continue;
      }
      const stop = firstOf(held, BODY_ENDS);
      if (stop === undefined) {
        const keep = end ? held.length : held.length - pendingMarker(held, BODY_ENDS);
        this.#body(step, held.slice(0, keep));
        this.held = held.slice(keep);
        return step;
      }
      this.#body(step, held.slice(0, stop.at));
      const consumed = MESSAGE_ENDS.includes(stop.marker) ? stop.marker.length : 0;
      this.held = held.slice(stop.at + consumed);
      this.#channel = undefined;
    }
    return step;
  }
}

/** The channel a harmony header names (`final` when it names none). */
function channelOf(header: string): string {
  const at = header.indexOf(CHANNEL);
  const name = at < 0 ? undefined : /^\w+/.exec(header.slice(at + CHANNEL.length))?.[0];
  return name ?? "final";
}

/** The first of `markers` in `text`, and where. */
function firstOf(text: string, markers: readonly string[]) {
  let first: { at: number; marker: string } | undefined;
  for (const marker of markers) {
    const at = text.indexOf(marker);
    if (at >= 0 && (first === undefined || at < first.at)) first = { at, marker };
  }
  return first;
}

/** `<think>`…`</think>` at the head of the reply. */
const think: ReasoningConvention = {
  name: "think",
  marker: "</think>",
  start(tail) {
    const t = tail.trimEnd();
    return t.endsWith("<think>") ? "inside" : t.endsWith("</think>") ? "closed" : "open";
  },
  reader: (start) => new TaggedReader("<think>", "</think>", start),
};

/** gpt-oss's harmony channels. */
const harmony: ReasoningConvention = {
  name: "harmony",
  marker: CHANNEL,
  start: (tail) => tail.trimEnd().endsWith(`${CHANNEL}${ANALYSIS}${MESSAGE}`) ? "inside" : "open",
  reader: (start) => new HarmonyReader(start),
};

/** The conventions, keyed by the marker that finds them in a template, in the order tried. */
export const REASONING_CONVENTIONS: ReadonlyMap<string, ReasoningConvention> = new Map(
  [harmony, think].map((c) => [c.marker, c]),
);

/** The convention a chat template's text teaches, or undefined when it teaches none Kiln reads. */
export function detectReasoning(template: string): ReasoningConvention | undefined {
  for (const [marker, convention] of REASONING_CONVENTIONS) {
    if (template.includes(marker)) return convention;
  }
  return undefined;
}

/** The reasoning and content of a whole reply that starts as `start` says. */
export function parseReasoning(
  convention: ReasoningConvention,
  text: string,
  start: ReplyStart = "open",
): ReasoningStep {
  const reader = convention.reader(start);
  const a = reader.push(text), b = reader.finish();
  return { reasoning: a.reasoning + b.reasoning, content: a.content + b.content };
}
