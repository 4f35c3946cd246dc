/**
 * OpenAI's structured-output fields turned into what the engine and the reply reader take:
 * `response_format` and `tool_choice` (`required` or a named function) into Dynamo's
 * `sampling_options.guided_decoding`, `tools` into the chat template's `tools`, and the tool-call
 * convention the reply is read with.
 */
import { describe } from "../contract/describe.ts";
import type { ChatTemplate } from "../text/chat.ts";
import { EngineError } from "../contract/errors.ts";
import { constrainedConvention, detectConvention, type ToolCallConvention } from "./tool_calls.ts";

type Body = Record<string, unknown>;

const isObject = (v: unknown): v is Body =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Dynamo's `GuidedDecodingOptions` as Kiln fills it (`json`: a JSON Schema). */
export interface GuidedDecoding {
  /** A JSON Schema the output must match (`{type: "object"}`: any JSON object). */
  json: Record<string, unknown>;
}

/** How a request's reply is constrained and read. */
export interface StructuredOutput {
  /** `sampling_options.guided_decoding`, when the output is constrained. */
  guided?: GuidedDecoding;
  /** The request field the constraint comes from (named when the engine refuses it). */
  guidedBy?: "response_format" | "tool_choice";
  /** The template's `tools` (OpenAI's `tools` entries), when the prompt offers functions. */
  tools?: Record<string, unknown>[];
  /**
   * How to read calls from the reply, when calls may come (`names`: the functions a call may
   * name; a call to another is not one).
   */
  calls?: { convention: ToolCallConvention; maxCalls: number; names: ReadonlySet<string> };
}

/** `response_format` as `guided_decoding` (undefined for text or none). */
export function responseFormat(v: unknown): GuidedDecoding | undefined {
  if (v === undefined || v === null) return undefined;
  const bad = (why: string) => EngineError.invalidField("response_format", why);
  if (!isObject(v)) throw bad(`expected an object, got ${describe(v)}`);
  switch (v.type) {
    case "text":
      return undefined;
    case "json_object":
      return { json: { type: "object" } };
    case "json_schema": {
      const s = v.json_schema;
      if (!isObject(s) || typeof s.name !== "string" || s.name === "") {
        throw bad("json_schema: expected {name, schema, strict}");
      }
      if (s.schema !== undefined && !isObject(s.schema)) {
        throw bad(`json_schema.schema: expected a JSON Schema object, got ${describe(s.schema)}`);
      }
      if (s.strict !== undefined && s.strict !== null && typeof s.strict !== "boolean") {
        throw bad("json_schema.strict: expected a boolean");
      }
      return { json: (s.schema as Body | undefined) ?? {} };
    }
    default:
      throw bad(`type: expected "text", "json_object" or "json_schema", got ${describe(v.type)}`);
  }
}

interface Fn {
  name: string;
  parameters: Body;
}

const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** `tools`: function definitions, checked. */
function functions(v: unknown): Fn[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) {
    throw EngineError.invalidField("tools", `expected an array, got ${describe(v)}`);
  }
  return v.map((t, i) => {
    const bad = (why: string) => EngineError.invalidField("tools", `[${i}]: ${why}`);
    if (!isObject(t) || t.type !== "function" || !isObject(t.function)) {
      throw bad('expected {type: "function", function: {name, description, parameters}}');
    }
    const f = t.function;
    if (typeof f.name !== "string" || !FUNCTION_NAME.test(f.name)) {
      throw bad(`function.name: expected 1 to 64 letters, digits, _ or -, got ${describe(f.name)}`);
    }
    if (f.description !== undefined && typeof f.description !== "string") {
      throw bad("function.description: expected a string");
    }
    if (f.parameters !== undefined && !isObject(f.parameters)) {
      throw bad(
        `function.parameters: expected a JSON Schema object, got ${describe(f.parameters)}`,
      );
    }
    return { name: f.name, parameters: (f.parameters as Body | undefined) ?? { type: "object" } };
  });
}

/** The schema of one call object to `f`, as the constrained reply writes it. */
const callSchema = (f: Fn): Body => ({
  type: "object",
  properties: { name: { type: "string", enum: [f.name] }, arguments: f.parameters },
  required: ["name", "arguments"],
  additionalProperties: false,
});

/**
 * The structured-output fields of a body: `response_format` (both forms), and for chat `tools`,
 * `tool_choice` (`none`, `auto`, `required`, `{type: "function", function: {name}}`) and
 * `parallel_tool_calls`. `tool_choice` `none` leaves the functions out of the prompt. Throws
 * `EngineError` (`InvalidArgument`, `param` the field) naming the field.
 */
export function structuredOutput(
  b: Record<string, unknown>,
  chat: boolean,
  template: ChatTemplate,
): StructuredOutput {
  const format = responseFormat(b.response_format);
  const out: StructuredOutput = format ? { guided: format, guidedBy: "response_format" } : {};
  const fns = functions(b.tools);
  if (!chat && fns.length > 0) {
    throw EngineError.invalidField("tools", "only chat completions take tools");
  }
  const choice = b.tool_choice ?? (fns.length > 0 ? "auto" : "none");
  const parallel = b.parallel_tool_calls;
  if (parallel !== undefined && parallel !== null && typeof parallel !== "boolean") {
    throw EngineError.invalidField("parallel_tool_calls", "expected a boolean");
  }
  if (choice === "none") return out;
  let named: Fn | undefined;
  if (isObject(choice)) {
    const name = isObject(choice.function) ? choice.function.name : undefined;
    if (choice.type !== "function" || typeof name !== "string") {
      throw EngineError.invalidField(
        "tool_choice",
        'expected {type: "function", function: {name}}',
      );
    }
    named = fns.find((f) => f.name === name);
    if (named === undefined) {
      throw EngineError.invalidField("tool_choice", `no function ${describe(name)} among tools`);
    }
  } else if (choice !== "auto" && choice !== "required") {
    throw EngineError.invalidField(
      "tool_choice",
      `expected "none", "auto", "required" or a named function, got ${describe(choice)}`,
    );
  }
  if (fns.length === 0) {
    throw EngineError.invalidField("tool_choice", "no tools given to choose from");
  }
  const maxCalls = parallel === false || named ? 1 : Infinity;
  const names = new Set(named ? [named.name] : fns.map((f) => f.name));
  const convention = template.isDefault ? undefined : detectConvention(template.source);
  out.tools = (b.tools as Body[]).map((t) => ({ ...t }));
  if (choice === "auto") {
    if (convention === undefined) {
      throw EngineError.invalidField(
        "tools",
        "the model's chat template shows no tool-call format Kiln can read (use tool_choice " +
          '"required" or a named function, whose output is constrained)',
      );
    }
    out.calls = { convention, maxCalls, names };
    return out;
  }
  if (format) {
    throw EngineError.invalidField(
      "response_format",
      `cannot be combined with tool_choice ${describe(choice)}`,
    );
  }
  const one: Body = named ? callSchema(named) : { anyOf: fns.map(callSchema) };
  out.guided = {
    json: maxCalls === 1 ? one : { type: "array", items: one, minItems: 1 },
  };
  out.guidedBy = "tool_choice";
  out.calls = { convention: constrainedConvention(convention), maxCalls, names };
  return out;
}
