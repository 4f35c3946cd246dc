/**
 * Tool-call readers, one per chat-template convention, on replies written in each template's
 * format: the calls and content of each reply whole, the same when the reply is cut at every
 * character (streaming) or fed a character at a time, malformed calls left as content, the
 * convention found from each fixture template's text, and call ids in the form the template takes.
 */
import { deepStrictEqual, match, ok, strictEqual as equal } from "node:assert/strict";
import {
  constrainedConvention,
  detectConvention,
  parseToolCalls,
  TOOL_CALL_CONVENTIONS,
  type ToolCallConvention,
  ToolCallParser,
  type ToolCallStep,
} from "./tool_calls.ts";
import { pieceSplits, readPieces } from "../../test/support/tool_reads.ts";

const TEMPLATES = new URL("../../test/fixtures/chat_templates/", import.meta.url);
const template = (name: string) => Deno.readTextFileSync(new URL(name, TEMPLATES));
const convention = (marker: string) => TOOL_CALL_CONVENTIONS.get(marker)!;

const weather = { name: "get_weather", arguments: '{"city":"Zürich","unit":"c"}' };
const time = { name: "get_time", arguments: '{"tz":"Europe/Zurich"}' };
const empty = { name: "get_time", arguments: "{}" };

/** A reply, the convention it is read with, and what it must give. */
interface Case {
  name: string;
  convention: ToolCallConvention;
  reply: string;
  want: ToolCallStep;
  maxCalls?: number;
}

const tagged = convention("<tool_call>"), named = convention("[ARGS]");
const listed = convention("[TOOL_CALLS]"), bare = convention('"parameters"');
const constrained = constrainedConvention();
const badHermes = '<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>';

const CASES: Case[] = [
  {
    name: "tagged: one call",
    convention: tagged,
    reply:
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich", "unit": "c"}}\n</tool_call>',
    want: { content: "", calls: [weather] },
  },
  {
    name: "tagged: text, then two calls",
    convention: tagged,
    reply: 'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": ' +
      '{"city": "Zürich", "unit": "c"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", ' +
      '"arguments": {"tz": "Europe/Zurich"}}\n</tool_call>',
    want: { content: "Let me look.", calls: [weather, time] },
  },
  {
    name: "tagged: parallel_tool_calls false keeps the first",
    convention: tagged,
    reply: '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>\n' +
      '<tool_call>{"name": "get_weather", "arguments": {"city": "Zürich"}}</tool_call>',
    want: { content: "", calls: [empty] },
    maxCalls: 1,
  },
  {
    name: "tagged: arguments as JSON text",
    convention: tagged,
    reply: '<tool_call>{"name": "get_time", "arguments": "{\\"tz\\": \\"Europe/Zurich\\"}"}' +
      "</tool_call>",
    want: { content: "", calls: [time] },
  },
  {
    name: "tagged: the reply ends before the closing tag",
    convention: tagged,
    reply: '<tool_call>\n{"name": "get_time", "arguments": {}}\n',
    want: { content: "", calls: [empty] },
  },
  {
    name: "tagged: malformed JSON is content, and reading goes on",
    convention: tagged,
    reply: `${badHermes} and <tool_call>{"name": "get_time", "arguments": {}}</tool_call>`,
    want: { content: `${badHermes} and`, calls: [empty] },
  },
  {
    name: "tagged: a cut-off call and a lone partial marker are content",
    convention: tagged,
    reply: 'a <tool_ b <tool_call>{"name": "get_time", "argu',
    want: { content: 'a <tool_ b <tool_call>{"name": "get_time", "argu', calls: [] },
  },
  {
    name: "tagged: no call",
    convention: tagged,
    reply: "  Zürich is at 408 m.\n",
    want: { content: "  Zürich is at 408 m.\n", calls: [] },
  },
  {
    name: "bare JSON: one call",
    convention: bare,
    reply: '{"name": "get_weather", "parameters": {"city": "Zürich", "unit": "c"}}',
    want: { content: "", calls: [weather] },
  },
  {
    name: "bare JSON: after <|python_tag|>, two calls joined by ;",
    convention: bare,
    reply: '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Zürich", "unit": "c"}}' +
      '; {"name": "get_time", "parameters": {"tz": "Europe/Zurich"}}',
    want: { content: "", calls: [weather, time] },
  },
  {
    name: "bare JSON: leading whitespace, then a call",
    convention: bare,
    reply: '\n\n {"name": "get_time", "parameters": {}}',
    want: { content: "", calls: [empty] },
  },
  {
    name: "bare JSON: braces inside prose are content",
    convention: bare,
    reply: 'It is {"warm"} today; {"name": "get_time", "parameters": {}}',
    want: { content: 'It is {"warm"} today; {"name": "get_time", "parameters": {}}', calls: [] },
  },
  {
    name: "bare JSON: an object that is not a call is content",
    convention: bare,
    reply: '{"city": "Zürich"} is the answer',
    want: { content: '{"city": "Zürich"} is the answer', calls: [] },
  },
  {
    name: "bare JSON: cut off",
    convention: bare,
    reply: '{"name": "get_weather", "parameters": {"city": "Z',
    want: { content: '{"name": "get_weather", "parameters": {"city": "Z', calls: [] },
  },
  {
    name: "listed JSON: two calls",
    convention: listed,
    reply: '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Zürich", "unit": "c"}}, ' +
      '{"name": "get_time", "arguments": {"tz": "Europe/Zurich"}}]',
    want: { content: "", calls: [weather, time] },
  },
  {
    name: "listed JSON: malformed is content",
    convention: listed,
    reply: '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city"}}]',
    want: { content: '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city"}}]', calls: [] },
  },
  {
    name: "named arguments: two calls, one with a call id",
    convention: named,
    reply: '[TOOL_CALLS]get_weather[ARGS]{"city": "Zürich", "unit": "c"}' +
      '[TOOL_CALLS]get_time[CALL_ID]a1b2c3d4e[ARGS]{"tz": "Europe/Zurich"}',
    want: { content: "", calls: [weather, time] },
  },
  {
    name: "named arguments: not a name, then a call",
    convention: named,
    reply: "[TOOL_CALLS]get weather[ARGS]{}[TOOL_CALLS]get_time[ARGS]{}",
    want: { content: "[TOOL_CALLS]get weather[ARGS]{}", calls: [empty] },
  },
  {
    name: "named arguments: arguments not an object",
    convention: named,
    reply: "Sure. [TOOL_CALLS]get_time[ARGS][1, 2]",
    want: { content: "Sure. [TOOL_CALLS]get_time[ARGS][1, 2]", calls: [] },
  },
  {
    name: "constrained: one object",
    convention: constrained,
    reply: '{"name": "get_weather", "arguments": {"city": "Zürich", "unit": "c"}}',
    want: { content: "", calls: [weather] },
  },
  {
    name: "constrained: an array",
    convention: constrained,
    reply: '[{"name": "get_time", "arguments": {}}, {"name": "get_time", "arguments": {}}]',
    want: { content: "", calls: [empty, empty] },
  },
];

/** Read `pieces` in order with one parser; the content and calls of all steps. */
function stream(c: Case, pieces: string[]): ToolCallStep {
  return readPieces(new ToolCallParser(c.convention, c.maxCalls), pieces);
}

Deno.test("tool calls: each convention's replies, whole", () => {
  for (const c of CASES) {
    deepStrictEqual(parseToolCalls(c.convention, c.reply, c.maxCalls), c.want, c.name);
  }
});

Deno.test("tool calls: cut at every character, or fed one at a time, the same as whole", () => {
  for (const c of CASES) {
    for (const [how, pieces] of pieceSplits(c.reply)) {
      deepStrictEqual(stream(c, pieces), c.want, `${c.name}, ${how}`);
    }
  }
});

Deno.test("tool calls: text before a call is given out before the call completes", () => {
  const parser = new ToolCallParser(tagged);
  equal(parser.push("Checking the weather ").content, "Checking the weather");
  // A marker cut by the stream is held back until it resolves; so is whitespace before it.
  deepStrictEqual(parser.push("now <tool_"), { content: " now", calls: [] });
  deepStrictEqual(parser.push('call>{"name": "get_time", '), { content: "", calls: [] });
  deepStrictEqual(parser.push('"arguments": {}}</tool_call>'), { content: "", calls: [empty] });
  deepStrictEqual(parser.finish(), { content: "", calls: [] });
});

Deno.test("tool calls: the convention is found from each family's template text", () => {
  const expected: [string, ToolCallConvention | undefined][] = [
    ["Qwen-Qwen3-0.6B.jinja", tagged],
    ["Qwen-Qwen2.5-7B-Instruct.jinja", tagged],
    ["meta-llama-Llama-3.1-8B-Instruct.jinja", bare],
    ["meta-llama-Llama-3.2-3B-Instruct.jinja", bare],
    ["mistralai-Mistral-Nemo-Instruct-2407.jinja", listed],
    ["Mistral-Small-3.2-24B-Instruct-2506.jinja", named],
    ["google-gemma-2-2b-it.jinja", undefined],
    ["microsoft-Phi-3.5-mini-instruct.jinja", undefined],
  ];
  for (const [file, want] of expected) equal(detectConvention(template(file)), want, file);
});

Deno.test("tool calls: ids in the form each template takes", () => {
  // Mistral's templates raise on a tool_call_id that is not 9 letters or digits.
  for (const c of [named, listed]) match(c.callId(), /^[A-Za-z0-9]{9}$/);
  for (const c of [tagged, bare, constrained]) match(c.callId(), /^call_[A-Za-z0-9]{24}$/);
  match(constrainedConvention(named).callId(), /^[A-Za-z0-9]{9}$/);
  const ids = new Set(Array.from({ length: 100 }, () => tagged.callId()));
  ok(ids.size === 100, "ids are distinct");
});
