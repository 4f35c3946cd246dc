/**
 * Function calls in a model's output, read per the convention its chat template teaches: one
 * parser per convention, found by a marker in the template's text, and a streaming reader that
 * turns text pieces into content and whole calls. A call is given out once its JSON is complete
 * and parses; text that looked like a call but is not one (malformed JSON, a marker with no call
 * after it, arguments that are not an object, a function the request did not offer: one rule for
 * every convention, {@linkcode CallCheck}) is content, never an error. The same call twice is two
 * calls. A reply cut by `max_tokens` keeps the calls complete before the cut; the call it cut is
 * dropped, neither content nor a call.
 */
import {
  type CallCheck,
  callFrom,
  callOf,
  findMarker,
  firstNonSpace,
  jsonEnd,
  jsonStringEnd,
  type Opening,
  type ParsedToolCall,
  parseJson,
  randomAlnum,
  type ReplyEnd,
  type Scan,
  scanConstrained,
  scanJsonCalls,
  unfinished,
} from "./tool_scan.ts";

export type { CallCheck, ParsedToolCall, ReplyEnd } from "./tool_scan.ts";

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
  /** Read the call(s) after an opener, the reply having come as far as `end` says. */
  scan(text: string, end: ReplyEnd, check: CallCheck): Scan;
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
  scan(text, end, check) {
    const close = text.indexOf(TOOL_CALL_CLOSE);
    if (close >= 0) {
      const call = callOf(parseJson(text.slice(0, close).trim()), check);
      const used = close + TOOL_CALL_CLOSE.length;
      return call ? { calls: [call], used } : { bad: true, used };
    }
    if (end === "more") return { more: true };
    // Unclosed at the end (or with its closing tag cut), a call whose JSON is whole is a call.
    const i = firstNonSpace(text);
    const j = text[i] === "{" ? jsonEnd(text, i) : -1;
    const rest = j < 0 ? undefined : text.slice(j).trim();
    const call = rest !== undefined && TOOL_CALL_CLOSE.startsWith(rest)
      ? callOf(parseJson(text.slice(i, j)), check)
      : undefined;
    return call ? { calls: [call], used: text.length } : unfinished(end, text.length);
  },
  callId: openAiId,
};

/** `[TOOL_CALLS]name[ARGS]{...}` (a `[CALL_ID]id` may come before `[ARGS]`), one per call. */
const namedArgs: ToolCallConvention = {
  marker: ARGS,
  open: (text) => findMarker(text, TOOL_CALLS),
  scan(text, end, check) {
    const a = text.indexOf(ARGS);
    const head = a < 0 ? text : text.slice(0, a);
    // A name and a call id are word characters; anything else before [ARGS] is not a call.
    if (/[^\w.\-[\]]/.test(head)) return { bad: true, used: 0 };
    if (a < 0) return unfinished(end, text.length, [], 0);
    const name = head.split(CALL_ID)[0]!;
    if (!/^[\w.\-]+$/.test(name)) return { bad: true, used: 0 };
    const rest = text.slice(a + ARGS.length);
    const i = firstNonSpace(rest);
    if (i < 0) return unfinished(end, text.length);
    // The arguments are the JSON after [ARGS]: an object, array or string (a template given
    // arguments as OpenAI's JSON text writes them quoted) is read whole, then checked.
    if (!'{["'.includes(rest[i]!)) return { bad: true, used: 0 };
    const close = rest[i] === '"' ? jsonStringEnd(rest, i) : jsonEnd(rest, i);
    if (close < 0) return unfinished(end, text.length);
    const call = callFrom(name, parseJson(rest.slice(i, close)), check);
    const used = a + ARGS.length + close;
    return call ? { calls: [call], used } : { bad: true, used };
  },
  callId: nineAlnum,
};

/** `[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]`. */
const listedJson: ToolCallConvention = {
  marker: TOOL_CALLS,
  open: (text) => findMarker(text, TOOL_CALLS),
  scan: (text, end, check) => scanJsonCalls(text, end, (c) => c === "[", check),
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
  scan: (text, end, check) => scanJsonCalls(text, end, (c) => c === "{", check),
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
 * is one call object or an array of them, whose calls are given out one by one as each element
 * completes (see {@linkcode scanConstrained}); ids in `ids`'s form.
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
    scan: scanConstrained,
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
 * calls. Reading the text whole or cut anywhere gives the same content and calls. A reply that
 * `finish` is told was cut (`max_tokens`) drops what it held back: the call it cut, and a marker
 * it cut, are neither content nor calls.
 */
export class ToolCallParser {
  #text = "";
  /** Characters of opener at the start of `#text` while a call is open. */
  #skip: number | undefined;
  /** Calls of the open call's list already given out (a constrained list, element by element). */
  #given = 0;
  #blank = "";
  #contentSeen = false;
  #afterCall = false;
  #dropped = false;
  #calls = 0;

  /**
   * `maxCalls`: calls past it are dropped (`parallel_tool_calls: false` keeps one); `check`: what
   * a call must be (the request's function names; arguments an object), see {@linkcode CallCheck}.
   */
  constructor(
    readonly convention: ToolCallConvention,
    readonly maxCalls: number = Infinity,
    readonly check: CallCheck = {},
  ) {}

  /** Calls given out so far. */
  get calls(): number {
    return this.#calls;
  }

  /** Read the next piece of text. */
  push(text: string): ToolCallStep {
    this.#text += text;
    return this.#read("more");
  }

  /** The end of the reply (`cut`: by `max_tokens`): what was held back is decided. */
  finish(cut = false): ToolCallStep {
    return this.#read(cut ? "cut" : "end");
  }

  /** Give out the calls of the open call past those given already. */
  #give(step: ToolCallStep, calls: ParsedToolCall[]): void {
    const fresh = calls.slice(this.#given);
    this.#given = calls.length;
    if (fresh.length === 0) return;
    const kept = fresh.slice(0, Math.max(0, this.maxCalls - this.#calls));
    step.calls.push(...kept);
    this.#calls += kept.length;
    this.#afterCall = true;
  }

  #read(end: ReplyEnd): ToolCallStep {
    const step: ToolCallStep = { content: "", calls: [] };
    const content = (s: string) => {
      this.#blank += s;
      const at = this.#blank.trimEnd().length;
      if (at > 0) {
        step.content += this.#blank.slice(0, at);
        this.#blank = this.#blank.slice(at);
        this.#contentSeen = true;
        this.#afterCall = false;
      }
    };
    for (;;) {
      if (this.#skip !== undefined) {
        const r = this.convention.scan(this.#text.slice(this.#skip), end, this.check);
        if ("more" in r) {
          if (r.calls) this.#give(step, r.calls);
          break;
        }
        const at = this.#skip + r.used;
        if ("bad" in r) content(this.#text.slice(0, at));
        else if (r.calls.length > 0) this.#give(step, r.calls);
        else this.#dropped = true;
        this.#text = this.#text.slice(at);
        this.#skip = undefined;
        this.#given = 0;
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
        if (end !== "more") {
          if (end === "end" || this.#text.trim() === "") content(this.#text);
          else this.#dropped = true;
          this.#text = "";
        }
        break;
      }
      content(this.#text.slice(0, o.at));
      this.#text = this.#text.slice(o.at);
      this.#skip = o.skip;
    }
    if (end !== "more" && this.#calls === 0 && !this.#dropped) {
      step.content += this.#blank;
      this.#blank = "";
    }
    return step;
  }
}

/** The content and calls of a whole reply (`cut`: by `max_tokens`). */
export function parseToolCalls(
  convention: ToolCallConvention,
  text: string,
  maxCalls = Infinity,
  cut = false,
  check: CallCheck = {},
): ToolCallStep {
  const parser = new ToolCallParser(convention, maxCalls, check);
  const a = parser.push(text), b = parser.finish(cut);
  return { content: a.content + b.content, calls: [...a.calls, ...b.calls] };
}
