/**
 * Function calls in a model's output, read per the convention its chat template teaches: one
 * parser per convention, found by a marker in the template's text, and a streaming reader that
 * turns text pieces into content and whole calls. A call is given out once its JSON is complete
 * and parses; text that looked like a call but is not one (malformed JSON, a marker with no call
 * after it) is content, never an error.
 */
import {
  callOf,
  findMarker,
  firstNonSpace,
  jsonEnd,
  type Opening,
  type ParsedToolCall,
  parseJson,
  randomAlnum,
  type Scan,
  scanJsonCalls,
} from "./tool_scan.ts";

export type { ParsedToolCall } from "./tool_scan.ts";

/** Where the reader is, for conventions whose calls may only start at some places. */
export interface ReadState {
  /** Nothing but whitespace has been read. */
  atStart: boolean;
  /** Only whitespace since the last call. */
  afterCall: boolean;
}

/** How one family of chat templates writes function calls into the output. */
export interface ToolCallConvention {
  /** Text whose presence in a chat template marks the convention. */
  readonly marker: string;
  /** Where the next call opens in `text` (see {@linkcode Opening}). */
  open(text: string, state: ReadState): Opening;
  /** Read the call(s) after an opener; `final`: no more text will come. */
  scan(text: string, final: boolean): Scan;
  /** A new call id in the form the convention's templates accept. */
  callId(): string;
}

const openAiId = () => `call_${randomAlnum(24)}`;
/** The `[TOOL_CALLS]` templates refuse call ids that are not 9 letters or digits. */
const nineAlnum = () => randomAlnum(9);

const TOOL_CALL_OPEN = "<tool_call>", TOOL_CALL_CLOSE = "</tool_call>";
const TOOL_CALLS = "[TOOL_CALLS]", ARGS = "[ARGS]", CALL_ID = "[CALL_ID]";
const PYTHON_TAG = "<|python_tag|>";

/** `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, one per call. */
const taggedJson: ToolCallConvention = {
  marker: TOOL_CALL_OPEN,
  open: (text) => findMarker(text, TOOL_CALL_OPEN),
  scan(text, final) {
    const end = text.indexOf(TOOL_CALL_CLOSE);
    if (end < 0 && !final) return { more: true };
    const body = end < 0 ? text : text.slice(0, end);
    const used = end < 0 ? text.length : end + TOOL_CALL_CLOSE.length;
    const call = callOf(parseJson(body.trim()));
    return call ? { calls: [call], used } : { bad: true, used };
  },
  callId: openAiId,
};

/** `[TOOL_CALLS]name[ARGS]{...}` (a `[CALL_ID]id` may come before `[ARGS]`), one per call. */
const namedArgs: ToolCallConvention = {
  marker: ARGS,
  open: (text) => findMarker(text, TOOL_CALLS),
  scan(text, final) {
    const a = text.indexOf(ARGS);
    const head = a < 0 ? text : text.slice(0, a);
    // A name and a call id are word characters; anything else before [ARGS] is not a call.
    if (/[^\w.\-[\]]/.test(head)) return { bad: true, used: 0 };
    if (a < 0) return final ? { bad: true, used: 0 } : { more: true };
    const name = head.split(CALL_ID)[0]!;
    if (!/^[\w.\-]+$/.test(name)) return { bad: true, used: 0 };
    const rest = text.slice(a + ARGS.length);
    const i = firstNonSpace(rest);
    if (i < 0) return final ? { bad: true, used: text.length } : { more: true };
    if (rest[i] !== "{") return { bad: true, used: 0 };
    const end = jsonEnd(rest, i);
    if (end < 0) return final ? { bad: true, used: text.length } : { more: true };
    const args = parseJson(rest.slice(i, end));
    const used = a + ARGS.length + end;
    return typeof args === "object" && args !== null && !Array.isArray(args)
      ? { calls: [{ name, arguments: JSON.stringify(args) }], used }
      : { bad: true, used };
  },
  callId: nineAlnum,
};

/** `[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]`. */
const listedJson: ToolCallConvention = {
  marker: TOOL_CALLS,
  open: (text) => findMarker(text, TOOL_CALLS),
  scan: (text, final) => scanJsonCalls(text, final, (c) => c === "["),
  callId: nineAlnum,
};

/**
 * `{"name": ..., "parameters": {...}}` as the whole reply (calls may follow each other after `;`),
 * or after `<|python_tag|>` anywhere.
 */
const bareJson: ToolCallConvention = {
  marker: '"parameters"',
  open(text, state) {
    if (state.atStart || state.afterCall) {
      const i = firstNonSpace(text);
      if (i < 0) return { hold: 0 };
      if (text[i] === "{") return { at: i, skip: 0 };
      if (state.afterCall && text[i] === ";") {
        const j = firstNonSpace(text, i + 1);
        if (j < 0) return { hold: i };
        if (text[j] === "{") return { at: i, skip: j - i };
      }
    }
    return findMarker(text, PYTHON_TAG);
  },
  scan: (text, final) => scanJsonCalls(text, final, (c) => c === "{"),
  callId: openAiId,
};

/**
 * The conventions, keyed by the marker that finds them in a template, in the order they are
 * tried (`[ARGS]` before `[TOOL_CALLS]`: templates of the `[ARGS]` form have both).
 */
export const TOOL_CALL_CONVENTIONS: ReadonlyMap<string, ToolCallConvention> = new Map(
  [taggedJson, namedArgs, listedJson, bareJson].map((c) => [c.marker, c]),
);

/** The convention a chat template's text teaches, or undefined when it teaches none Kiln reads. */
export function detectConvention(template: string): ToolCallConvention | undefined {
  for (const [marker, convention] of TOOL_CALL_CONVENTIONS) {
    if (template.includes(marker)) return convention;
  }
  return undefined;
}

/**
 * Output constrained to be calls (`tool_choice` `required` or a named function): the whole reply
 * is one call object or an array of them; ids in `ids`'s form.
 */
export function constrainedConvention(ids?: ToolCallConvention): ToolCallConvention {
  return {
    marker: "",
    open(text, state) {
      if (!state.atStart) return undefined;
      const i = firstNonSpace(text);
      if (i < 0) return { hold: 0 };
      return text[i] === "{" || text[i] === "[" ? { at: i, skip: 0 } : undefined;
    },
    scan: (text, final) => scanJsonCalls(text, final, (c) => c === "{" || c === "["),
    callId: ids?.callId ?? openAiId,
  };
}

/** What one piece of text held: content to show, and calls now complete. */
export interface ToolCallStep {
  /** Text that is not a call. */
  content: string;
  /** Calls completed by this piece. */
  calls: ParsedToolCall[];
}

/**
 * Reads a reply piece by piece: `push` each piece of text, `finish` at the end. Text that might
 * still become a call (a cut marker, an open call) is held back until it is decided; whitespace
 * at the end of the content is held until other text follows it, and dropped when the reply made
 * calls. Reading the text whole or cut anywhere gives the same content and calls.
 */
export class ToolCallParser {
  #text = "";
  /** Characters of opener at the start of `#text` while a call is open. */
  #skip: number | undefined;
  #blank = "";
  #contentSeen = false;
  #afterCall = false;
  #calls = 0;

  /** `maxCalls`: calls past it are dropped (`parallel_tool_calls: false` keeps one). */
  constructor(readonly convention: ToolCallConvention, readonly maxCalls: number = Infinity) {}

  /** Calls given out so far. */
  get calls(): number {
    return this.#calls;
  }

  /** Read the next piece of text. */
  push(text: string): ToolCallStep {
    this.#text += text;
    return this.#read(false);
  }

  /** The end of the reply: what was held back is decided. */
  finish(): ToolCallStep {
    return this.#read(true);
  }

  #read(final: boolean): ToolCallStep {
    const step: ToolCallStep = { content: "", calls: [] };
    const content = (s: string) => {
      this.#blank += s;
      const end = this.#blank.trimEnd().length;
      if (end > 0) {
        step.content += this.#blank.slice(0, end);
        this.#blank = this.#blank.slice(end);
        this.#contentSeen = true;
        this.#afterCall = false;
      }
    };
    for (;;) {
      if (this.#skip !== undefined) {
        const r = this.convention.scan(this.#text.slice(this.#skip), final);
        if ("more" in r) break;
        const end = this.#skip + r.used;
        if ("calls" in r) {
          const kept = r.calls.slice(0, Math.max(0, this.maxCalls - this.#calls));
          step.calls.push(...kept);
          this.#calls += kept.length;
          this.#afterCall = true;
        } else content(this.#text.slice(0, end));
        this.#text = this.#text.slice(end);
        this.#skip = undefined;
        continue;
      }
      if (this.#text === "") break;
      const o = this.convention.open(this.#text, {
        atStart: !this.#contentSeen && this.#calls === 0,
        afterCall: this.#afterCall,
      });
      if (o === undefined) {
        content(this.#text);
        this.#text = "";
        break;
      }
      if ("hold" in o) {
        content(this.#text.slice(0, o.hold));
        this.#text = this.#text.slice(o.hold);
        if (final) {
          content(this.#text);
          this.#text = "";
        }
        break;
      }
      content(this.#text.slice(0, o.at));
      this.#text = this.#text.slice(o.at);
      this.#skip = o.skip;
    }
    if (final && this.#calls === 0) {
      step.content += this.#blank;
      this.#blank = "";
    }
    return step;
  }
}

/** The content and calls of a whole reply. */
export function parseToolCalls(
  convention: ToolCallConvention,
  text: string,
  maxCalls = Infinity,
): ToolCallStep {
  const parser = new ToolCallParser(convention, maxCalls);
  const a = parser.push(text), b = parser.finish();
  return { content: a.content + b.content, calls: [...a.calls, ...b.calls] };
}
