/**
 * A Responses API body (`POST /v1/responses`) checked and translated into a chat-completions
 * body, which `parseJob` then turns into the job the chat path runs: `instructions` and the
 * `input` items as `messages`, flat function `tools` as chat's, `tool_choice`, `text.format` as
 * `response_format`, `max_output_tokens` as `max_completion_tokens`, `reasoning.effort` as
 * `reasoning_effort`. The template, guided decoding, the tool-call reader and every limit are
 * then chat's own. A field Kiln does not honour is refused by name, and an error about a chat
 * field is reported under the Responses field it came from (`messages` is `input`).
 */
import { describe } from "../contract/describe.ts";
import { EngineError } from "../contract/errors.ts";
import type { ModelText } from "../text/load.ts";
import { badRequest, clip } from "./errors.ts";
import { type Job, type Limits, parseJob } from "./requests.ts";
import { chatMessages, type ConversationItem, inputItems } from "./responses_input.ts";
import type { ResponseStore } from "./responses_store.ts";

type Body = Record<string, unknown>;

const isObject = (v: unknown): v is Body =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const given = (v: unknown) => v !== undefined && v !== null;

/** A checked Responses request: the chat job, the conversation so far, what the answer echoes. */
export interface ResponsesJob {
  /** The chat job that runs it. */
  job: Job;
  /** The earlier conversation (from `previous_response_id`) and this request's `input`. */
  items: ConversationItem[];
  /** The request's settings as the response object echoes them (defaults filled in). */
  echo: Record<string, unknown>;
  /** Keep the response, so that a later request may continue from it (`store`, default true). */
  store: boolean;
}

/** The fields read here; any other is refused by name. */
const FIELDS = new Set([
  "model",
  "input",
  "instructions",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "text",
  "max_output_tokens",
  "temperature",
  "top_p",
  "stream",
  "store",
  "metadata",
  "user",
  "service_tier",
  "previous_response_id",
  "reasoning",
  // Honoured only when they ask for nothing (see `checkNothingAsked`).
  "truncation",
  "include",
  "background",
]);

/** Chat's fields, as the Responses body names them. */
const RENAMED: Record<string, string> = {
  messages: "input",
  max_completion_tokens: "max_output_tokens",
  max_tokens: "max_output_tokens",
  response_format: "text.format",
  reasoning_effort: "reasoning.effort",
};

/**
 * An error about a chat field (`messages`, `response_format`, ...) as one about the Responses
 * field it came from (`input`, `text.format`, ...), its message saying so; anything else as it
 * is. Applies to errors of `parseJob` and of the run (an engine refusing the constraint).
 */
export function responsesError(e: unknown): unknown {
  if (!(e instanceof EngineError) || e.param === undefined) return e;
  const to = RENAMED[e.param];
  if (to === undefined) return e;
  let message = e.message.startsWith(`${e.param}:`)
    ? `${to}:${e.message.slice(e.param.length + 1)}`
    : `${to}: ${e.message}`;
  message = message.replace("unsupported field for chat completions", "not supported");
  return new EngineError(e.type, message, { cause: e, param: to });
}

/** The body's `previous_response_id`, checked (undefined when absent). */
export function previousResponseId(body: unknown): string | undefined {
  const v = isObject(body) ? body.previous_response_id : undefined;
  if (!given(v)) return undefined;
  if (typeof v !== "string" || v === "") {
    throw badRequest(
      `previous_response_id: expected a response id, got ${describe(v)}`,
      "previous_response_id",
    );
  }
  return v;
}

/** OpenAI's refusal of a `previous_response_id` that is not stored (404 over HTTP). */
export const notStored = (id: string): EngineError =>
  badRequest(`Previous response with id '${clip(id, 100)}' not found.`, "previous_response_id");

/**
 * Check a Responses body and build its job, the conversation of `previous_response_id` taken
 * from `store`. Throws `EngineError` (`InvalidArgument`, `param` the field): for a bad body, and
 * {@linkcode notStored} for a `previous_response_id` that `store` does not hold.
 */
export function startResponse(
  body: unknown,
  store: ResponseStore,
  text: ModelText,
  limits: Limits,
): ResponsesJob {
  const previous = previousResponseId(body);
  const prior = previous === undefined ? [] : store.get(previous)?.items;
  if (prior === undefined) throw notStored(previous!);
  return responsesJob(body, prior, text, limits);
}

/**
 * Check a Responses body and build its job; `prior` is the conversation of the stored response
 * `previous_response_id` names (looked up by the caller). Throws `EngineError`
 * (`InvalidArgument`, `param` the Responses field) for a bad body.
 */
export function responsesJob(
  body: unknown,
  prior: readonly ConversationItem[],
  text: ModelText,
  limits: Limits,
): ResponsesJob {
  if (!isObject(body)) throw badRequest("the body must be a JSON object");
  for (const key of Object.keys(body)) {
    if (!FIELDS.has(key)) throw badRequest(`${key}: unsupported field for responses`, key);
  }
  checkNothingAsked(body);
  const previous = previousResponseId(body);
  const input = inputItems(body.input);
  if (input.length === 0 && previous === undefined) {
    throw badRequest("input: required (a string or a non-empty array of items)", "input");
  }
  const items = [...prior, ...input];
  const instructions = optionalString(body, "instructions");
  const tools = functionTools(body.tools);
  const format = textFormat(body.text);
  const effort = reasoningEffort(body.reasoning);
  const store = optionalBoolean(body, "store") ?? true;
  const chat: Body = {
    model: body.model,
    messages: chatMessages(instructions, items),
    ...(tools ? { tools: tools.map(chatTool) } : {}),
    ...(given(body.tool_choice) ? { tool_choice: chatToolChoice(body.tool_choice) } : {}),
    ...(format ? { response_format: format } : {}),
    ...(effort !== undefined ? { reasoning_effort: effort } : {}),
    // `metadata`, `user` and `service_tier` are checked as chat checks them (no effect).
    ...copied(body, [
      "temperature",
      "top_p",
      "parallel_tool_calls",
      "stream",
      "metadata",
      "user",
      "service_tier",
    ]),
    ...(given(body.max_output_tokens) ? { max_completion_tokens: body.max_output_tokens } : {}),
  };
  let job: Job;
  try {
    job = parseJob(chat, true, text, limits);
  } catch (e) {
    throw responsesError(e);
  }
  const echo = {
    instructions: instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: body.metadata ?? {},
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: previous ?? null,
    reasoning: { effort: effort ?? null, summary: null },
    service_tier: "default",
    store,
    temperature: body.temperature ?? 1,
    text: {
      format: isObject(body.text) && given(body.text.format) ? body.text.format : { type: "text" },
    },
    tool_choice: body.tool_choice ?? "auto",
    tools: tools ?? [],
    top_p: body.top_p ?? 1,
    truncation: "disabled",
    ...(typeof body.user === "string" ? { user: body.user } : {}),
  };
  return { job, items, echo, store };
}

const copied = (b: Body, keys: string[]): Body =>
  Object.fromEntries(keys.filter((k) => given(b[k])).map((k) => [k, b[k]]));

function optionalString(b: Body, key: string): string | undefined {
  const v = b[key];
  if (!given(v)) return undefined;
  if (typeof v !== "string") throw badRequest(`${key}: expected a string, got ${describe(v)}`, key);
  return v;
}

function optionalBoolean(b: Body, key: string): boolean | undefined {
  const v = b[key];
  if (!given(v)) return undefined;
  if (typeof v !== "boolean") {
    throw badRequest(`${key}: expected a boolean, got ${describe(v)}`, key);
  }
  return v;
}

/** `truncation`, `include` and `background`: accepted when they ask for nothing Kiln lacks. */
function checkNothingAsked(b: Body): void {
  if (given(b.truncation) && b.truncation !== "disabled") {
    throw badRequest(
      `truncation: only "disabled" is supported (an input over the context is refused), got ${
        describe(b.truncation)
      }`,
      "truncation",
    );
  }
  if (given(b.include) && !(Array.isArray(b.include) && b.include.length === 0)) {
    throw badRequest(
      `include: no extra output is available, got ${describe(b.include)}`,
      "include",
    );
  }
  if (given(b.background) && b.background !== false) {
    throw badRequest("background: background responses are not supported", "background");
  }
}

const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const TOOL_KEYS = new Set(["type", "name", "description", "parameters", "strict"]);

/** `tools`: function tools in the Responses form, checked. */
function functionTools(v: unknown): Body[] | undefined {
  if (!given(v)) return undefined;
  if (!Array.isArray(v)) throw badRequest(`tools: expected an array, got ${describe(v)}`, "tools");
  return v.map((t, i) => {
    const no = (why: string) => badRequest(`tools[${i}]${why}`, "tools");
    if (!isObject(t) || t.type !== "function") {
      throw no(
        `: only function tools are supported, got type ${describe(isObject(t) ? t.type : t)}`,
      );
    }
    const extra = Object.keys(t).find((k) => !TOOL_KEYS.has(k));
    if (extra !== undefined) throw no(`.${extra}: not supported`);
    if (typeof t.name !== "string" || !FUNCTION_NAME.test(t.name)) {
      throw no(`.name: expected 1 to 64 letters, digits, _ or -, got ${describe(t.name)}`);
    }
    if (given(t.description) && typeof t.description !== "string") {
      throw no(".description: expected a string");
    }
    if (given(t.parameters) && !isObject(t.parameters)) {
      throw no(`.parameters: expected a JSON Schema object, got ${describe(t.parameters)}`);
    }
    if (given(t.strict) && typeof t.strict !== "boolean") throw no(".strict: expected a boolean");
    return { ...t };
  });
}

/** A Responses function tool as chat's `{type, function: {...}}`. */
const chatTool = (t: Body): Body => ({
  type: "function",
  function: {
    name: t.name,
    ...(given(t.description) ? { description: t.description } : {}),
    ...(given(t.parameters) ? { parameters: t.parameters } : {}),
  },
});

function chatToolChoice(v: unknown): unknown {
  if (v === "auto" || v === "none" || v === "required") return v;
  if (
    isObject(v) && v.type === "function" && typeof v.name === "string" &&
    Object.keys(v).length === 2
  ) {
    return { type: "function", function: { name: v.name } };
  }
  throw badRequest(
    `tool_choice: expected "auto", "none", "required" or {type: "function", name}, got ${
      describe(v)
    }`,
    "tool_choice",
  );
}

/** `text.format` as chat's `response_format`; `text.verbosity` is refused. */
function textFormat(v: unknown): Body | undefined {
  if (!given(v)) return undefined;
  if (!isObject(v)) throw badRequest(`text: expected an object, got ${describe(v)}`, "text");
  for (const key of Object.keys(v)) {
    if (key !== "format" && key !== "verbosity") {
      throw badRequest(`text.${key}: not supported`, `text.${key}`);
    }
  }
  if (given(v.verbosity)) {
    throw badRequest(
      "text.verbosity: not supported (the reply's length is the model's own)",
      "text.verbosity",
    );
  }
  const f = v.format;
  if (!given(f)) return undefined;
  const no = (why: string) => badRequest(`text.format: ${why}`, "text.format");
  if (!isObject(f)) throw no(`expected an object, got ${describe(f)}`);
  if (f.type === "text" || f.type === "json_object") return { type: f.type };
  if (f.type !== "json_schema") {
    throw no(`type: expected "text", "json_object" or "json_schema", got ${describe(f.type)}`);
  }
  if (typeof f.name !== "string" || f.name === "") throw no("name: required (a non-empty string)");
  if (!isObject(f.schema)) {
    throw no(`schema: expected a JSON Schema object, got ${describe(f.schema)}`);
  }
  if (given(f.strict) && typeof f.strict !== "boolean") throw no("strict: expected a boolean");
  if (given(f.description) && typeof f.description !== "string") {
    throw no("description: expected a string");
  }
  const schema = { name: f.name, schema: f.schema, ...copied(f, ["strict", "description"]) };
  return { type: "json_schema", json_schema: schema };
}

/** `reasoning`: its `effort` (chat's `reasoning_effort`); summaries are refused. */
function reasoningEffort(v: unknown): string | undefined {
  if (!given(v)) return undefined;
  if (!isObject(v)) {
    throw badRequest(`reasoning: expected an object, got ${describe(v)}`, "reasoning");
  }
  for (const key of Object.keys(v)) {
    if (key === "effort") continue;
    const param = `reasoning.${key}`;
    if (key !== "summary" && key !== "generate_summary") {
      throw badRequest(`${param}: not supported`, param);
    }
    if (given(v[key])) throw badRequest(`${param}: reasoning summaries are not made`, param);
  }
  if (!given(v.effort)) return undefined;
  if (typeof v.effort !== "string") {
    throw badRequest(
      `reasoning.effort: expected a string, got ${describe(v.effort)}`,
      "reasoning.effort",
    );
  }
  return v.effort;
}
