/**
 * The demo's structured modes, both on `openModel`'s OpenAI-shaped helpers: JSON output held to a
 * JSON Schema (`response_format: {type: "json_schema", ...}`, streamed, then pretty-printed and
 * checked), and a tool-call example (`tools` and `tool_choice`, the calls streamed as
 * `tool_calls` deltas, a cut by `max_tokens` said). A bad schema or body is refused by the
 * request with an `EngineError` (`InvalidArgument` naming the field), which the page shows as it
 * shows any error.
 */
import type { ChatCompletionTool, FinishReasonText, SamplingFields } from "../src/openai/types.ts";
import type { KilnModel } from "../src/worker/open.ts";
import { checkSchema } from "./schema_check.ts";

/** The schema box's first content: a small object with a string, a bounded integer and tags. */
export const DEFAULT_SCHEMA = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 1, maxLength: 24 },
    age: { type: "integer", minimum: 0, maximum: 120 },
    tags: {
      type: "array",
      items: { type: "string", enum: ["lucky", "wise", "brave", "curious"] },
      maxItems: 3,
    },
  },
  required: ["name", "age", "tags"],
  additionalProperties: false,
};

/** The tool-call example's functions. */
export const TOOLS: ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "The current weather in a city.",
      parameters: {
        type: "object",
        properties: {
          city: { type: "string", minLength: 1, maxLength: 32 },
          unit: { type: "string", enum: ["celsius", "fahrenheit"] },
        },
        required: ["city", "unit"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "get_time",
      description: "The local time in a time zone.",
      parameters: {
        type: "object",
        properties: { timezone: { type: "string", minLength: 1, maxLength: 32 } },
        required: ["timezone"],
        additionalProperties: false,
      },
    },
  },
];

/** The tool-call example's question, when the prompt box is empty. */
export const TOOL_QUESTION = "What is the weather in Paris right now?";

/** What a structured request needs from the page. */
export interface StructuredRun {
  model: KilnModel;
  /** The prompt box: a chat message (`chat`) or plain completion text. */
  prompt: string;
  chat: boolean;
  /** Sampling fields from the controls (`max_tokens`, `temperature`, `seed`, ...). */
  sampling: SamplingFields;
  signal: AbortSignal;
  /** The output panel. */
  output: HTMLElement;
  /** The line under it saying whether the JSON parsed and fits the schema. */
  check: HTMLElement;
}

/** How a run ended: OpenAI's finish reason and the generated tokens. */
export interface RunEnd {
  finish: FinishReasonText | null;
  tokens: number;
}

/** The schema box's text as a JSON Schema object, or an error naming what is wrong. */
export function parseSchema(text: string): Record<string, unknown> {
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch (e) {
    throw new Error(`the schema box is not JSON: ${(e as Error).message}`);
  }
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    throw new Error("the schema box must hold a JSON object (a JSON Schema)");
  }
  return schema as Record<string, unknown>;
}

function showCheck(el: HTMLElement, state: "valid" | "invalid" | "unparsed", text: string): void {
  el.dataset.check = state;
  el.textContent = text;
}

/**
 * JSON mode: stream the output of a request whose `response_format` is `schema`, then show it
 * pretty-printed with whether it parsed and what the light check found.
 */
export async function runJson(run: StructuredRun, schemaText: string): Promise<RunEnd> {
  const schema = parseSchema(schemaText);
  const response_format = {
    type: "json_schema" as const,
    json_schema: { name: "demo_output", schema, strict: true },
  };
  const common = {
    ...run.sampling,
    response_format,
    stream: true as const,
    stream_options: { include_usage: true },
  };
  const options = { signal: run.signal };
  let text = "", finish: FinishReasonText | null = null, tokens = 0;
  run.output.textContent = "";
  if (run.chat) {
    const chunks = await run.model.chat.completions.create(
      { ...common, messages: [{ role: "user", content: run.prompt }] },
      options,
    );
    for await (const c of chunks) {
      const choice = c.choices[0];
      text += choice?.delta.content ?? "";
      finish = choice?.finish_reason ?? finish;
      tokens = c.usage?.completion_tokens ?? tokens;
      run.output.textContent = text;
    }
  } else {
    const chunks = await run.model.completions.create({ ...common, prompt: run.prompt }, options);
    for await (const c of chunks) {
      const choice = c.choices[0];
      text += choice?.text ?? "";
      finish = choice?.finish_reason ?? finish;
      tokens = c.usage?.completion_tokens ?? tokens;
      run.output.textContent = text;
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    showCheck(run.check, "unparsed", `✗ the output is not JSON: ${(e as Error).message}`);
    return { finish, tokens };
  }
  run.output.textContent = JSON.stringify(value, null, 2);
  const problems = checkSchema(schema, value);
  if (problems.length === 0) showCheck(run.check, "valid", "✓ parsed, and it fits the schema");
  else showCheck(run.check, "invalid", `✗ parsed, but: ${problems.join("; ")}`);
  return { finish, tokens };
}

/** A call as the panel shows it: the name, and the arguments parsed from their JSON text. */
function shown(call: { name: string; arguments: string }): { name: string; arguments: unknown } {
  let args: unknown;
  try {
    args = JSON.parse(call.arguments);
  } catch {
    args = call.arguments; // shown as the text it is
  }
  return { name: call.name, arguments: args };
}

/**
 * What the check line says when `max_tokens` cut the reply (finish `length`): the calls complete
 * before the cut are kept, the one it cut is dropped. Undefined when the reply was not cut.
 */
export function cutNote(finish: FinishReasonText | null, kept: number): string | undefined {
  if (finish !== "length") return undefined;
  return kept === 0
    ? "the reply was cut at max_tokens before any call was complete"
    : `the reply was cut at max_tokens; ${kept} complete call(s) kept`;
}

/**
 * The tool-call example: a chat request offering `TOOLS` with `tool_choice` (`auto`,
 * `required`, or the name of one function), streamed; the panel shows the calls as JSON, each as
 * soon as the model completes it, and the check line whether each call's arguments fit its
 * function's parameters, and when `max_tokens` cut the reply, how many complete calls were kept.
 * With `auto` the model may answer in text instead: the panel then shows the text.
 */
export async function runToolCall(run: StructuredRun, choice: string): Promise<RunEnd> {
  const tool_choice = choice === "required" || choice === "auto"
    ? choice
    : { type: "function" as const, function: { name: choice } };
  run.output.textContent = "";
  const chunks = await run.model.chat.completions.create({
    ...run.sampling,
    messages: [{ role: "user", content: run.prompt || TOOL_QUESTION }],
    tools: TOOLS,
    tool_choice,
    stream: true,
    stream_options: { include_usage: true },
  }, { signal: run.signal });
  const raw: { name: string; arguments: string }[] = [];
  let finish: FinishReasonText | null = null, tokens = 0, text = "";
  for await (const c of chunks) {
    const delta = c.choices[0]?.delta;
    text += delta?.content ?? "";
    if (delta?.content && raw.length === 0) run.output.textContent = text;
    for (const d of delta?.tool_calls ?? []) {
      const call = raw[d.index] ??= { name: "", arguments: "" };
      call.name += d.function.name ?? "";
      call.arguments += d.function.arguments;
    }
    if (delta?.tool_calls) run.output.textContent = JSON.stringify(raw.map(shown), null, 2);
    finish = c.choices[0]?.finish_reason ?? finish;
    tokens = c.usage?.completion_tokens ?? tokens;
  }
  const calls = raw.map(shown);
  const cut = cutNote(finish, calls.length);
  if (calls.length === 0 && choice === "auto") {
    run.output.textContent = text;
    const said = "✓ a text answer, no call (auto lets the model choose)";
    showCheck(run.check, "valid", finish === "length" ? `${said}; cut at max_tokens` : said);
    return { finish, tokens };
  }
  run.output.textContent = JSON.stringify(calls, null, 2);
  const problems = calls.length === 0 ? [cut ?? "no call in the reply"] : calls.flatMap((c, i) => {
    const fn = TOOLS.find((t) => t.function.name === c.name);
    return fn === undefined
      ? [`call ${i}: no function ${JSON.stringify(c.name)}`]
      : checkSchema(fn.function.parameters, c.arguments, `call ${i} (${c.name}) arguments`);
  });
  if (problems.length === 0) {
    const fit = `✓ ${calls.length} call(s), arguments fit the parameters`;
    showCheck(run.check, "valid", cut === undefined ? fit : `${fit} (${cut})`);
  } else showCheck(run.check, "invalid", `✗ ${problems.join("; ")}`);
  return { finish, tokens };
}
