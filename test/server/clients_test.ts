/**
 * Function calls through `serve` as real clients make them, each as its docs show it: the
 * `openai` client (`chat.completions.create`, whole and streamed), the Vercel AI SDK
 * (`generateText`, `streamText` over `@ai-sdk/openai-compatible`) and LangChain (`ChatOpenAI`'s
 * `bindTools`, `invoke` and `stream`). On an engine whose reply the test writes (fortune's
 * tokenizer, Qwen3's template), with `tool_choice` required (a JSON list of two calls), a named
 * function (one call object) and auto (`<tool_call>` blocks after some text), every client gets
 * the calls as calls (names, parsed arguments), the content and the finish reason; also when
 * `max_tokens` cuts the reply inside its second call (finish `length`, the first call kept, no
 * raw JSON in the content), and the whole matrix 20 times in a row, each run passing. The raw
 * stream gives out a call while the engine is still held before the rest of the reply, and sends
 * no chunk with nothing in it. `test/server/tools_fortune_test.ts` runs the real engine.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import OpenAI from "openai";
import { generateText, jsonSchema, streamText, tool, type ToolChoice, type ToolSet } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ChatOpenAI } from "@langchain/openai";
import type { AIMessageChunk } from "@langchain/core/messages";
import type { GenerateContext } from "../../src/contract/engine.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "../../src/contract/types.ts";
import { qwen } from "../support/qwen_text.ts";
import { serveQwen } from "../support/qwen_server.ts";
import { ScriptedEngine } from "../support/scripted_engine.ts";

const WEATHER_CALL = '{"name": "get_weather", "arguments": {"city": "Zürich"}}';
const TIME_CALL = '{"name": "get_time", "arguments": {"timezone": "Europe/Zurich"}}';
/** The replies: `required` constrains to a list, a named function to one object. */
const REPLY = {
  required: `[${WEATHER_CALL}, ${TIME_CALL}]`,
  named: WEATHER_CALL,
  auto: `Let me check.\n<tool_call>\n${WEATHER_CALL}\n</tool_call>\n<tool_call>\n${TIME_CALL}` +
    "\n</tool_call>",
};
type Form = keyof typeof REPLY;
const FORMS = Object.keys(REPLY) as Form[];

/** `max_tokens` that cuts a form's reply inside its last call, at its `"arguments"`. */
const CUT = Object.fromEntries(FORMS.map((f) => {
  const text = REPLY[f].slice(0, REPLY[f].lastIndexOf('"arguments"'));
  return [f, qwen.tokenizer.encode(text, { addSpecial: false }).length];
})) as Record<Form, number>;

/** A call as every client is checked: its name and its parsed arguments. */
interface Call {
  name: string;
  args: unknown;
}
/** A reply as every client is checked (finish reasons in OpenAI's spelling). */
interface Got {
  text: string;
  calls: Call[];
  finish: string;
}
const weather = { name: "get_weather", args: { city: "Zürich" } };
const time = { name: "get_time", args: { timezone: "Europe/Zurich" } };
const WANT: Record<Form, Record<"full" | "cut", Got>> = {
  required: {
    full: { text: "", calls: [weather, time], finish: "tool_calls" },
    cut: { text: "", calls: [weather], finish: "length" },
  },
  named: {
    full: { text: "", calls: [weather], finish: "tool_calls" },
    cut: { text: "", calls: [], finish: "length" },
  },
  auto: {
    full: { text: "Let me check.", calls: [weather, time], finish: "tool_calls" },
    cut: { text: "Let me check.", calls: [weather], finish: "length" },
  },
};

/**
 * The scripted engine, answering each request with its form's reply (read from its
 * `guided_decoding`); `hold` stops it after that many tokens until `release` is called.
 */
class Engine extends ScriptedEngine {
  hold: { after: number; reached: () => void; release: Promise<void> } | undefined;

  constructor() {
    super("qwen", qwen.tokenizer, { script: (r) => REPLY[formOf(r)] });
  }

  override async *generate(
    request: PreprocessedRequest,
    ctx: GenerateContext,
  ): AsyncGenerator<LLMEngineOutput> {
    let n = 0;
    for await (const out of super.generate(request, ctx)) {
      yield out;
      const hold = this.hold;
      if (++n === hold?.after) {
        hold.reached();
        await hold.release;
      }
    }
  }
}

function formOf(r: PreprocessedRequest): Form {
  const json = r.sampling_options.guided_decoding?.json as Record<string, unknown> | undefined;
  return json === undefined ? "auto" : json.type === "array" ? "required" : "named";
}

const PARAMETERS = {
  get_weather: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
  },
  get_time: {
    type: "object",
    properties: { timezone: { type: "string" } },
    required: ["timezone"],
  },
} as const;
const NAMES = Object.keys(PARAMETERS) as (keyof typeof PARAMETERS)[];
const OPENAI_TOOLS = NAMES.map((name) => ({
  type: "function" as const,
  function: { name, description: `${name} of a place`, parameters: PARAMETERS[name] },
}));
const PROMPT = "Weather and time in Zürich?";

const serve = () => serveQwen(new Engine());

/** OpenAI's `tool_choice` for a form. */
const openAIChoice = (form: Form) =>
  form === "named" ? { type: "function" as const, function: { name: "get_weather" } } : form;

const parsed = (name: string, args: string): Call => ({ name, args: JSON.parse(args) });

/** The `openai` client: `create`, whole or streamed (the deltas put together as its docs do). */
async function viaOpenAI(baseURL: string, form: Form, maxTokens: number, stream: boolean) {
  const client = new OpenAI({ baseURL, apiKey: "x", maxRetries: 0 });
  const body = {
    model: "qwen",
    messages: [{ role: "user" as const, content: PROMPT }],
    tools: OPENAI_TOOLS,
    tool_choice: openAIChoice(form),
    max_tokens: maxTokens,
  };
  if (!stream) {
    const r = await client.chat.completions.create(body);
    const m = r.choices[0]!.message;
    const calls = (m.tool_calls ?? []).map((c) => {
      equal(c.type, "function");
      const f = (c as OpenAI.Chat.ChatCompletionMessageFunctionToolCall).function;
      return parsed(f.name, f.arguments);
    });
    return { text: m.content ?? "", calls, finish: r.choices[0]!.finish_reason };
  }
  let text = "", finish = "";
  const calls: { name: string; args: string }[] = [];
  for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
    const c = chunk.choices[0]!;
    text += c.delta.content ?? "";
    for (const d of c.delta.tool_calls ?? []) {
      const call = calls[d.index] ??= { name: "", args: "" };
      call.name += d.function?.name ?? "";
      call.args += d.function?.arguments ?? "";
    }
    finish = c.finish_reason ?? finish;
  }
  return { text, calls: calls.map((c) => parsed(c.name, c.args)), finish };
}

/** The AI SDK: `generateText` or `streamText` with `tools` and `toolChoice`. */
async function viaAISDK(baseURL: string, form: Form, maxTokens: number, stream: boolean) {
  const provider = createOpenAICompatible({ name: "kiln", baseURL, apiKey: "x" });
  // The SDK's tool types do not hold under `exactOptionalPropertyTypes` (deno.json): each
  // `tool(...)` is given the set's element type.
  const tools: ToolSet = {
    get_weather: tool({
      description: "get_weather of a place",
      inputSchema: jsonSchema<{ city: string }>(PARAMETERS.get_weather),
    }) as ToolSet[string],
    get_time: tool({
      description: "get_time of a place",
      inputSchema: jsonSchema<{ timezone: string }>(PARAMETERS.get_time),
    }) as ToolSet[string],
  };
  const toolChoice: ToolChoice<typeof tools> = form === "named"
    ? { type: "tool", toolName: "get_weather" }
    : form;
  const options = {
    model: provider("qwen"),
    tools,
    toolChoice,
    prompt: PROMPT,
    maxOutputTokens: maxTokens,
    maxRetries: 0,
  };
  const of = (r: { text: string; toolCalls: { toolName: string; input: unknown }[] }) =>
    r.toolCalls.map((c) => ({ name: c.toolName, args: c.input }));
  if (!stream) {
    const r = await generateText(options);
    return { text: r.text, calls: of(r), finish: r.finishReason.replace("-", "_") };
  }
  const errors: unknown[] = [];
  const s = streamText({ ...options, onError: ({ error }) => void errors.push(error) });
  const parts: string[] = [];
  for await (const part of s.fullStream) parts.push(part.type);
  deepStrictEqual(errors, [], `streamText: ${parts.join(", ")}`);
  const r = { text: await s.text, toolCalls: await s.toolCalls };
  return { text: r.text, calls: of(r), finish: (await s.finishReason).replace("-", "_") };
}

/** LangChain: `ChatOpenAI(...).bindTools(tools, {tool_choice})`, `invoke` or `stream`. */
async function viaLangChain(baseURL: string, form: Form, maxTokens: number, stream: boolean) {
  const model = new ChatOpenAI({
    model: "qwen",
    apiKey: "x",
    configuration: { baseURL },
    maxTokens,
    maxRetries: 0,
  });
  const choice = form === "named" ? "get_weather" : form;
  const bound = model.bindTools(OPENAI_TOOLS, { tool_choice: choice });
  let message: AIMessageChunk | undefined;
  if (stream) {
    for await (const chunk of await bound.stream(PROMPT)) {
      message = message === undefined ? chunk : message.concat(chunk);
    }
  } else message = await bound.invoke(PROMPT);
  const m = message!;
  deepStrictEqual(m.invalid_tool_calls ?? [], [], "no invalid tool calls");
  const calls = (m.tool_calls ?? []).map((c) => ({ name: c.name, args: c.args }));
  return { text: String(m.content), calls, finish: m.response_metadata.finish_reason };
}

const CLIENTS = { openai: viaOpenAI, "ai-sdk": viaAISDK, langchain: viaLangChain };

Deno.test({
  name: "clients x tool_choice x whole/streamed x cut or not: calls as calls, 20 runs in 20",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const s = await serve();
    const failures: string[] = [];
    try {
      for (let run = 0; run < 20; run++) {
        for (const [client, via] of Object.entries(CLIENTS)) {
          for (const form of FORMS) {
            for (const cut of [false, true]) {
              // A reply cut before any complete call has no call: the AI SDK then rightly
              // throws ToolChoiceViolationError, as it would with OpenAI.
              if (client === "ai-sdk" && form === "named" && cut) continue;
              for (const stream of [false, true]) {
                const what = `run ${run}: ${client} ${form} ${stream ? "streamed" : "whole"}` +
                  (cut ? " cut" : "");
                try {
                  const got = await via(s.baseURL, form, cut ? CUT[form] : 500, stream);
                  deepStrictEqual(got, WANT[form][cut ? "cut" : "full"], what);
                } catch (e) {
                  failures.push(`${what}: ${e instanceof Error ? e.message : e}`);
                }
              }
            }
          }
        }
      }
    } finally {
      await s.close();
    }
    deepStrictEqual(failures, []);
  },
});

/** Tokens of `reply` up to the end of `prefix` (the fewest whose text holds it). */
function tokensTo(reply: string, prefix: string): number {
  const ids = qwen.tokenizer.encode(reply, { addSpecial: false });
  for (let k = 1; k <= ids.length; k++) {
    if (qwen.tokenizer.decode(ids.slice(0, k)).startsWith(prefix)) return k;
  }
  throw new Error(`no prefix ${prefix}`);
}

Deno.test({
  name: "streamed: a call goes out as soon as it is complete, and no chunk is empty",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const s = await serve();
    const client = new OpenAI({ baseURL: s.baseURL, apiKey: "x", maxRetries: 0 });
    const firstCall = {
      required: `[${WEATHER_CALL}`,
      auto: `Let me check.\n<tool_call>\n${WEATHER_CALL}\n</tool_call>`,
    };
    try {
      for (const form of ["required", "auto"] as const) {
        for (const cut of [false, true]) {
          const what = `${form}${cut ? " cut" : ""}`;
          // The engine stops right after the first call's last token until the client has it
          // (or 2 s have passed: then the call did not come while the engine was held).
          let release!: () => void, held = false, timedOut = false;
          let timer: ReturnType<typeof setTimeout> | undefined;
          s.engine.hold = {
            after: tokensTo(REPLY[form], firstCall[form]),
            release: new Promise<void>((r) => (release = r)),
            reached: () => {
              held = true;
              timer = setTimeout(() => {
                timedOut = true;
                release();
              }, 2000);
            },
          };
          const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
          let whileHeld: boolean | undefined;
          const stream = await client.chat.completions.create({
            model: "qwen",
            messages: [{ role: "user", content: PROMPT }],
            tools: OPENAI_TOOLS,
            tool_choice: form,
            max_tokens: cut ? CUT[form] : 500,
            stream: true,
          });
          for await (const chunk of stream) {
            chunks.push(chunk);
            if (whileHeld === undefined && chunk.choices[0]?.delta.tool_calls) {
              whileHeld = held && !timedOut;
              release();
            }
          }
          s.engine.hold = undefined;
          clearTimeout(timer);
          equal(whileHeld, true, `${what}: the first call came while the engine was held`);
          // The first chunk has the role, the last the finish; every other one has something.
          const [first, last] = [chunks[0]!.choices[0]!, chunks.at(-1)!.choices[0]!];
          equal(first.delta.role, "assistant", what);
          equal(last.finish_reason, cut ? "length" : "tool_calls", what);
          for (const [i, chunk] of chunks.entries()) {
            const c = chunk.choices[0]!;
            if (i > 0 && i < chunks.length - 1) {
              ok(c.delta.content || c.delta.tool_calls, `${what}: chunk ${i} is empty`);
              equal(c.finish_reason, null, `${what}: chunk ${i}`);
            }
          }
          const content = chunks.map((c) => c.choices[0]!.delta.content ?? "").join("");
          equal(content, WANT[form][cut ? "cut" : "full"].text, `${what}: content`);
          const headers = chunks.flatMap((c) => c.choices[0]!.delta.tool_calls ?? [])
            .filter((d) => d.id !== undefined);
          equal(headers.length, cut ? 1 : 2, `${what}: calls`);
        }
      }
    } finally {
      await s.close();
    }
  },
});
