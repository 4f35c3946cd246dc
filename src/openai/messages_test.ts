/**
 * OpenAI chat messages with function calls, rendered through each family's own template: the
 * conversation as an OpenAI client sends it (`arguments` as JSON text, `content: null` beside
 * `tool_calls`, text parts) renders exactly as jinja2 renders the same conversation in Hugging
 * Face's form (`test/fixtures/chat_templates/expected.json`), for Qwen3, Llama 3.1 and both
 * Mistral templates; bad messages are refused naming `messages`.
 */
import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { ChatTemplate } from "../text/chat.ts";
import { EngineError } from "../contract/errors.ts";
import { chatMessages } from "./messages.ts";

const FIXTURES = new URL("../../test/fixtures/chat_templates/", import.meta.url);
interface Case {
  name: string;
  messages: Record<string, unknown>[];
  tools?: Record<string, unknown>[];
  add_generation_prompt: boolean;
  output?: string;
}
interface Family {
  template: string;
  special_tokens: Record<string, string>;
  cases: Case[];
}
const expected = JSON.parse(Deno.readTextFileSync(new URL("expected.json", FIXTURES))) as {
  now: string;
  families: Record<string, Family>;
};

/** A Hugging Face-form message as an OpenAI client sends it. */
function openAiForm(m: Record<string, unknown>): Record<string, unknown> {
  const calls = m.tool_calls as { function: { arguments: unknown } }[] | undefined;
  if (calls === undefined) return { ...m, content: [{ type: "text", text: m.content }] };
  return {
    ...m,
    content: m.content === "" ? null : m.content,
    tool_calls: calls.map((c) => ({
      ...c,
      function: {
        ...c.function,
        arguments: typeof c.function.arguments === "string"
          ? c.function.arguments
          : JSON.stringify(c.function.arguments),
      },
    })),
  };
}

Deno.test("chat messages with tool calls render as jinja2 renders them, per family", () => {
  for (const family of ["qwen3", "llama", "mistral", "mistral3.2"]) {
    const f = expected.families[family]!;
    const source = Deno.readTextFileSync(new URL(f.template, FIXTURES));
    const template = new ChatTemplate(source);
    const cases = f.cases.filter((c) => c.name === "tools" || c.name === "tool_call_and_result");
    equal(cases.length, 2, family);
    for (const c of cases) {
      const messages = chatMessages(c.messages.map(openAiForm));
      const rendered = template.render(messages, f.special_tokens, {
        addGenerationPrompt: c.add_generation_prompt,
        ...(c.tools ? { tools: c.tools } : {}),
        now: () => new Date(expected.now),
      });
      equal(rendered, c.output, `${family} ${c.name}`);
    }
  }
});

Deno.test("chat messages: OpenAI's forms become the template's", () => {
  const [assistant, tool] = chatMessages([
    {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "f", arguments: '{"a": [1]}' } },
        { id: "call_2", type: "function", function: { name: "g", arguments: "not json" } },
      ],
    },
    { role: "tool", tool_call_id: "call_1", name: "f", content: [{ type: "text", text: "ok" }] },
  ]);
  deepStrictEqual(assistant, {
    role: "assistant",
    content: "",
    tool_calls: [
      { id: "call_1", type: "function", function: { name: "f", arguments: { a: [1] } } },
      { id: "call_2", type: "function", function: { name: "g", arguments: "not json" } },
    ],
  });
  deepStrictEqual(tool, { role: "tool", content: "ok", tool_call_id: "call_1", name: "f" });
});

Deno.test("chat messages: what cannot be rendered is refused naming messages", () => {
  const bad: unknown[] = [
    [],
    [{ role: "user", content: null }],
    [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }],
    [{ role: "user", content: "x", tool_calls: [] }],
    [{ role: "assistant", content: null, tool_calls: [{ type: "function", function: {} }] }],
    [{ role: "tool", content: "x" }],
    [{ content: "x" }],
  ];
  for (const messages of bad) {
    throws(() => chatMessages(messages), (e: unknown) => {
      ok(e instanceof EngineError, String(e));
      equal(e.param, "messages");
      equal(e.type, "InvalidArgument");
      ok(e.message.startsWith("messages: "), e.message);
      return true;
    }, JSON.stringify(messages));
  }
});
