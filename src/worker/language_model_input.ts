/**
 * The Prompt API's input checks, as its spec words them, for Kiln's `LanguageModel`: prompts
 * validated and canonicalized into chat messages, `expectedInputs`/`expectedOutputs`, the
 * sampling options, `create`'s options in all (and those left for `openModel`),
 * `responseConstraint` as a `response_format`; and the `DOMException`s the API
 * reports (`NotSupportedError`, `SyntaxError`, `QuotaExceededError`, ...), Kiln's `EngineError`s
 * among them.
 */
import { describe } from "../contract/describe.ts";
import { EngineError } from "../contract/errors.ts";
import type { SamplingFields } from "../openai/types.ts";
import type { ChatMessage } from "../text/chat.ts";
import type {
  KilnLanguageModelCreateOptions,
  KilnModelSource,
  LanguageModelCreateCoreOptions,
  LanguageModelExpected,
  LanguageModelParams,
  LanguageModelSamplingMode,
} from "./language_model_types.ts";

/** A `DOMException` named `name`, with `cause` kept where given. */
export function domError(name: string, message: string, cause?: unknown): DOMException {
  const e = new DOMException(message, name);
  if (cause !== undefined) Object.defineProperty(e, "cause", { value: cause, configurable: true });
  return e;
}

/**
 * A `QuotaExceededError`: the platform's class where it has one (a `DOMException` with
 * `requested` and `quota`), else a `DOMException` of that name with those two members.
 */
export function quotaExceeded(message: string, requested: number, quota: number): DOMException {
  const Quota = (globalThis as {
    QuotaExceededError?: new (m: string, o: { requested: number; quota: number }) => DOMException;
  }).QuotaExceededError;
  if (typeof Quota === "function") return new Quota(message, { requested, quota });
  const e = domError("QuotaExceededError", message);
  Object.defineProperties(e, { requested: { value: requested }, quota: { value: quota } });
  return e;
}

/**
 * A failure of Kiln's (an `EngineError`) as the Prompt API reports it: input Kiln refuses
 * (`InvalidArgument`) is `NotSupportedError`, a cancelled request `AbortError`, anything else
 * `UnknownError`; the `EngineError` is the `cause`. Errors that are already the API's pass.
 */
export function apiError(e: unknown): unknown {
  if (!(e instanceof EngineError)) return e;
  const name = e.type === "InvalidArgument"
    ? "NotSupportedError"
    : e.type === "Cancelled"
    ? "AbortError"
    : "UnknownError";
  return domError(name, e.message, e);
}

/** `p`, or a rejection with `signal`'s reason as soon as it aborts. */
export function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return p;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * A failed load as `create` reports it: `NetworkError` for a connection failure, else
 * `OperationError`, with Kiln's error as its `cause`.
 */
export function loadError(e: unknown): DOMException {
  const type = (e as { type?: string }).type;
  const network = ["CannotConnect", "Disconnected", "ConnectionTimeout", "ResponseTimeout"];
  return domError(
    network.includes(type ?? "") ? "NetworkError" : "OperationError",
    `the model did not load: ${e instanceof Error ? e.message : String(e)}`,
    e,
  );
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

const ROLES = new Set(["system", "user", "assistant"]);
const TYPES = new Set(["text", "image", "audio", "tool-call", "tool-response"]);

/** A prompt as chat messages, and whether its last one is a reply's start to continue. */
export interface CanonicalPrompt {
  /** The messages, each one's text parts joined. */
  messages: ChatMessage[];
  /** The last message is an `assistant` one with `prefix: true`. */
  prefix: boolean;
}

/** One content part's text, or the error the spec gives for it. */
function partText(part: unknown, role: string, at: string): string {
  if (!isObject(part) || typeof part.type !== "string" || !TYPES.has(part.type)) {
    throw new TypeError(`${at}: expected {type, value} with a LanguageModelMessageType`);
  }
  if (part.type !== "text") {
    throw domError(
      "NotSupportedError",
      `${at}: content of type "${part.type}" is not supported${
        role === "assistant" ? " in an assistant message" : ": Kiln's models take text only"
      }`,
    );
  }
  if (typeof part.value !== "string") {
    throw new TypeError(`${at}: a "text" part's value must be a string`);
  }
  return part.value;
}

/**
 * The spec's "validate and canonicalize a prompt": a string is one user message, an empty list
 * one empty user message; `prefix` only on a last `assistant` message (`SyntaxError`); `system`
 * only before anything else of the session (`started` false; `TypeError`); content other than
 * text is `NotSupportedError`; a message's text parts are joined as they are.
 */
export function canonicalPrompt(input: unknown, started: boolean): CanonicalPrompt {
  if (typeof input === "string") {
    return { messages: [{ role: "user", content: input }], prefix: false };
  }
  if (!Array.isArray(input)) {
    throw new TypeError(`expected a string or an array of messages, got ${describe(input)}`);
  }
  if (input.length === 0) return { messages: [{ role: "user", content: "" }], prefix: false };
  let prefix = false;
  const messages = input.map((m: unknown, i): ChatMessage => {
    const at = `[${i}]`;
    if (!isObject(m) || typeof m.role !== "string" || !ROLES.has(m.role)) {
      throw new TypeError(`${at}: expected {role: "system" | "user" | "assistant", content}`);
    }
    const role = m.role;
    if (m.prefix !== undefined && typeof m.prefix !== "boolean") {
      throw new TypeError(`${at}.prefix: expected a boolean`);
    }
    if (m.prefix === true) {
      if (role !== "assistant") {
        throw domError("SyntaxError", `${at}: prefix is only for an assistant message`);
      }
      if (i !== input.length - 1) {
        throw domError("SyntaxError", `${at}: prefix is only for the last message`);
      }
      prefix = true;
    }
    if (role === "system" && (started || i > 0)) {
      throw new TypeError(`${at}: a system message only comes first in a session`);
    }
    const c = m.content;
    let content: string;
    if (typeof c === "string") content = c;
    else if (Array.isArray(c)) {
      content = c.map((p, j) => partText(p, role, `${at}.content[${j}]`)).join("");
    } else throw new TypeError(`${at}.content: expected a string or an array of parts`);
    return { role, content };
  });
  return { messages, prefix };
}

/**
 * `expectedInputs` or `expectedOutputs` (`field`), checked: each `type` one of the IDL's, its
 * `languages` canonical BCP 47 tags (`RangeError` for a malformed one). Returns the types other
 * than text that it names (which Kiln's models cannot take or give).
 */
export function expectedTypes(list: unknown, field: string): string[] {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new TypeError(`${field}: expected an array`);
  const other = new Set<string>();
  (list as unknown[]).forEach((e, i) => {
    const x = e as Partial<LanguageModelExpected> | null;
    if (!isObject(x) || typeof x.type !== "string" || !TYPES.has(x.type)) {
      throw new TypeError(`${field}[${i}].type: expected a LanguageModelMessageType`);
    }
    if (x.languages !== undefined) {
      if (!Array.isArray(x.languages) || !x.languages.every((l) => typeof l === "string")) {
        throw new TypeError(`${field}[${i}].languages: expected an array of strings`);
      }
      Intl.getCanonicalLocales(x.languages); // RangeError for a malformed tag
    }
    if (x.type !== "text") other.add(x.type);
  });
  return [...other];
}

/** The presets of `samplingMode`: Kiln's choice of `temperature` and `topK` for each. */
export const SAMPLING_MODES: Readonly<
  Record<LanguageModelSamplingMode, { temperature: number; topK: number }>
> = {
  "most-predictable": { temperature: 0, topK: 1 },
  "predictable": { temperature: 0.4, topK: 10 },
  "balanced": { temperature: 0.8, topK: 40 },
  "creative": { temperature: 1, topK: 80 },
  "most-creative": { temperature: 1.3, topK: 160 },
};

/** Kiln's `LanguageModel.params()`: the `balanced` preset, `topK` up to 1,024, temperature 2. */
export const PARAMS: LanguageModelParams = Object.freeze({
  defaultTopK: SAMPLING_MODES.balanced.topK,
  maxTopK: 1024,
  defaultTemperature: SAMPLING_MODES.balanced.temperature,
  maxTemperature: 2,
});

/** A session's sampling: the mode it reports and the parameters it samples with. */
export interface Sampling {
  /** `samplingMode` as given, else `balanced`. */
  samplingMode: LanguageModelSamplingMode;
  /** `topK` (integer, within `PARAMS.maxTopK`). */
  topK: number;
  /** `temperature` (within `PARAMS.maxTemperature`). */
  temperature: number;
}

/**
 * The sampling of `options`: `samplingMode` (one of the presets) or `topK`/`temperature` (each
 * alone takes the other's default), not both (`TypeError`, as the explainer has it). Out of range
 * above is clamped (`Infinity` included); below (`topK` < 1, `temperature` < 0) or not a number
 * is a `RangeError`.
 */
export function sampling(options: LanguageModelCreateCoreOptions): Sampling {
  const { samplingMode, topK, temperature } = options;
  if (samplingMode !== undefined) {
    if (!Object.hasOwn(SAMPLING_MODES, samplingMode)) {
      throw new TypeError(
        `samplingMode: not a LanguageModelSamplingMode: ${describe(samplingMode)}`,
      );
    }
    if (topK !== undefined || temperature !== undefined) {
      throw new TypeError("samplingMode: not with topK or temperature");
    }
    return { samplingMode, ...SAMPLING_MODES[samplingMode] };
  }
  const number = (v: unknown, name: string, min: number) => {
    if (typeof v !== "number" || Number.isNaN(v) || v < min) {
      throw new RangeError(`${name}: expected a number >= ${min}, got ${describe(v)}`);
    }
    return v;
  };
  return {
    samplingMode: "balanced",
    topK: topK === undefined
      ? PARAMS.defaultTopK
      : Math.min(Math.floor(number(topK, "topK", 1)), PARAMS.maxTopK),
    temperature: temperature === undefined
      ? PARAMS.defaultTemperature
      : Math.min(number(temperature, "temperature", 0), PARAMS.maxTemperature),
  };
}

/** What `create` and `availability` refuse or cannot serve: types other than text, tools. */
export function unsupported(o: LanguageModelCreateCoreOptions): string | undefined {
  const types = [
    ...expectedTypes(o.expectedInputs, "expectedInputs").map((t) => `expectedInputs: "${t}"`),
    ...expectedTypes(o.expectedOutputs, "expectedOutputs").map((t) => `expectedOutputs: "${t}"`),
  ];
  if (types.length > 0) return `${types.join(", ")}: Kiln's models take and give text only`;
  if (o.tools !== undefined && (!Array.isArray(o.tools) || o.tools.length > 0)) {
    return "tools: tool use is not supported";
  }
  return undefined;
}

/** What a session `create` makes starts with: its sampling, conversation, model, reply limit. */
export interface CreateChoices {
  /** The session's sampling. */
  sampling: Sampling;
  /** `initialPrompts` as chat messages (none without them). */
  initial: ChatMessage[];
  /** The model to open or share. */
  model: KilnModelSource;
  /** Most tokens of one reply (undefined: what is left of the context). */
  maxTokens: number | undefined;
}

/**
 * `create`'s options checked, in this order: types other than text, tools (`NotSupportedError`);
 * the sampling (as `sampling`); `initialPrompts` (canonicalized, no `prefix`:
 * `NotSupportedError`); `model` (required: `TypeError`); `maxTokens` (an integer >= 1:
 * `RangeError`).
 */
export function createChoices(o: KilnLanguageModelCreateOptions): CreateChoices {
  const why = unsupported(o);
  if (why !== undefined) throw domError("NotSupportedError", why);
  const chosen = sampling(o);
  const initial = o.initialPrompts === undefined || o.initialPrompts.length === 0
    ? { messages: [], prefix: false }
    : canonicalPrompt(o.initialPrompts, false);
  if (initial.prefix) {
    throw domError("NotSupportedError", "initialPrompts: prefix is for prompt() only");
  }
  const { model, maxTokens } = o;
  if (model === undefined) throw new TypeError("model: required (a URL, files or a KilnModel)");
  if (maxTokens !== undefined && !(Number.isInteger(maxTokens) && maxTokens >= 1)) {
    throw new RangeError(`maxTokens: expected an integer >= 1, got ${maxTokens}`);
  }
  return { sampling: chosen, initial: initial.messages, model, maxTokens };
}

/** The IDL members that are not `openModel`'s options. */
const API_KEYS = [
  "signal",
  "monitor",
  "initialPrompts",
  "topK",
  "temperature",
  "samplingMode",
  "expectedInputs",
  "expectedOutputs",
  "tools",
  "model",
  "maxTokens",
] as const;

/** `create`'s options less the IDL's members, `model` and `maxTokens`: `openModel`'s options. */
export function openOptions(o: KilnLanguageModelCreateOptions): Record<string, unknown> {
  const rest: Record<string, unknown> = { ...o };
  for (const k of API_KEYS) delete rest[k];
  return rest;
}

/**
 * `responseConstraint` as Kiln's `response_format`: a JSON Schema object is a `json_schema`
 * format (guided decoding); a `RegExp` is `NotSupportedError` (Kiln's OpenAI layer constrains to
 * JSON Schemas only); anything else a `TypeError`.
 */
export function constraintFormat(
  constraint: unknown,
): SamplingFields["response_format"] | undefined {
  if (constraint === undefined || constraint === null) return undefined;
  if (constraint instanceof RegExp) {
    throw domError(
      "NotSupportedError",
      "responseConstraint: a RegExp is not supported; give a JSON Schema",
    );
  }
  if (!isObject(constraint) || Array.isArray(constraint)) {
    throw new TypeError(
      `responseConstraint: expected a JSON Schema object, got ${describe(constraint)}`,
    );
  }
  return {
    type: "json_schema",
    json_schema: { name: "response", schema: constraint as Record<string, unknown> },
  };
}
