/**
 * Tool-call readers on replies cut by `max_tokens`, per convention: the calls complete before the
 * cut are kept, the call (or marker) the cut fell in is dropped, neither content nor a call, and
 * the text before it stays content; the same replies ended by the model keep the unfinished call
 * as content. A constrained list gives out each call as soon as its element is complete. Each
 * reply is also read cut at every character and fed a character at a time.
 */
import { deepStrictEqual } from "node:assert/strict";
import {
  constrainedConvention,
  parseToolCalls,
  TOOL_CALL_CONVENTIONS,
  type ToolCallConvention,
  ToolCallParser,
  type ToolCallStep,
} from "./tool_calls.ts";
import { pieceSplits, readPieces } from "../../test/support/tool_reads.ts";

const convention = (marker: string) => TOOL_CALL_CONVENTIONS.get(marker)!;
const tagged = convention("<tool_call>"), named = convention("[ARGS]");
const listed = convention("[TOOL_CALLS]"), bare = convention('"parameters"');
const constrained = constrainedConvention();

const weather = { name: "get_weather", arguments: '{"city":"Zürich"}' };
const time = { name: "get_time", arguments: "{}" };
const WEATHER = '{"name": "get_weather", "arguments": {"city": "Zürich"}}';
const TIME = '{"name": "get_time", "arguments": {}}';

/** A reply, how it ended, and what it must give. */
interface Case {
  name: string;
  convention: ToolCallConvention;
  reply: string;
  cut: boolean;
  want: ToolCallStep;
  maxCalls?: number;
}

const CASES: Case[] = [
  {
    name: "tagged: a call, then a call cut in its JSON",
    convention: tagged,
    reply: `Let me look.\n<tool_call>\n${WEATHER}\n</tool_call>\n<tool_call>\n{"name": "get_ti`,
    cut: true,
    want: { content: "Let me look.", calls: [weather] },
  },
  {
    name: "tagged: the same reply ended by the model keeps the unfinished call as content",
    convention: tagged,
    reply: `Let me look.\n<tool_call>\n${WEATHER}\n</tool_call>\n<tool_call>\n{"name": "get_ti`,
    cut: false,
    want: { content: 'Let me look.\n\n<tool_call>\n{"name": "get_ti', calls: [weather] },
  },
  {
    name: "tagged: cut after the JSON, before </tool_call>: the call is whole",
    convention: tagged,
    reply: `<tool_call>\n${WEATHER}\n</tool_`,
    cut: true,
    want: { content: "", calls: [weather] },
  },
  {
    name: "tagged: cut in a marker, after text",
    convention: tagged,
    reply: "It is warm.\n<tool_ca",
    cut: true,
    want: { content: "It is warm.", calls: [] },
  },
  {
    name: "tagged: cut in a call with no call before it",
    convention: tagged,
    reply: `Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"ci`,
    cut: true,
    want: { content: "Checking.", calls: [] },
  },
  {
    name: "tagged: a complete malformed call stays content when the cut falls after it",
    convention: tagged,
    reply: `<tool_call>{"name": }</tool_call> and <tool_call>${TIME}</tool_call> <tool_call>{`,
    cut: true,
    want: { content: '<tool_call>{"name": }</tool_call> and', calls: [time] },
  },
  {
    name: "tagged: text only, cut: the text is kept",
    convention: tagged,
    reply: "It is warm in Zür",
    cut: true,
    want: { content: "It is warm in Zür", calls: [] },
  },
  {
    name: "named arguments: a call, then one cut before [ARGS]",
    convention: named,
    reply: '[TOOL_CALLS]get_weather[ARGS]{"city": "Zürich"}[TOOL_CALLS]get_ti',
    cut: true,
    want: { content: "", calls: [weather] },
  },
  {
    name: "named arguments: cut in the arguments",
    convention: named,
    reply: 'Sure.[TOOL_CALLS]get_time[ARGS]{}[TOOL_CALLS]get_weather[ARGS]{"city": "Z',
    cut: true,
    want: { content: "Sure.", calls: [time] },
  },
  {
    name: "listed JSON: the list's complete calls before the cut",
    convention: listed,
    reply: `[TOOL_CALLS][${WEATHER}, ${TIME}, {"name": "get_we`,
    cut: true,
    want: { content: "", calls: [weather, time] },
  },
  {
    name: "listed JSON: ended by the model, an unclosed list is content",
    convention: listed,
    reply: `[TOOL_CALLS][${WEATHER}, {"name": "get_we`,
    cut: false,
    want: { content: `[TOOL_CALLS][${WEATHER}, {"name": "get_we`, calls: [] },
  },
  {
    name: "bare JSON: a call, then one cut after ;",
    convention: bare,
    reply: '{"name": "get_weather", "parameters": {"city": "Zürich"}}; {"name": "get_',
    cut: true,
    want: { content: "", calls: [weather] },
  },
  {
    name: "constrained: a list cut in its second call",
    convention: constrained,
    reply: `[${WEATHER}, {"name": "get_time", "argu`,
    cut: true,
    want: { content: "", calls: [weather] },
  },
  {
    name: "constrained: a list cut after a separator",
    convention: constrained,
    reply: `[${TIME}, ${WEATHER}, `,
    cut: true,
    want: { content: "", calls: [time, weather] },
  },
  {
    name: "constrained: one object cut: nothing",
    convention: constrained,
    reply: '{"name": "get_weather", "arguments": {"ci',
    cut: true,
    want: { content: "", calls: [] },
  },
  {
    name: "constrained: parallel_tool_calls false keeps the first of a cut list",
    convention: constrained,
    reply: `[${TIME}, ${WEATHER}, {"na`,
    cut: true,
    want: { content: "", calls: [time] },
    maxCalls: 1,
  },
  {
    name: "constrained: an element that is not a call ends the calls (an unguided engine)",
    convention: constrained,
    reply: `[${TIME}, 5]`,
    cut: false,
    want: { content: "5]", calls: [time] },
  },
];

/** Read `pieces` in order with one parser, then finish as the case ended. */
function read(c: Case, pieces: string[]): ToolCallStep {
  return readPieces(new ToolCallParser(c.convention, c.maxCalls), pieces, c.cut);
}

Deno.test("cut replies: complete calls kept, the cut call dropped; whole, split and char by char", () => {
  for (const c of CASES) {
    deepStrictEqual(parseToolCalls(c.convention, c.reply, c.maxCalls, c.cut), c.want, c.name);
    for (const [how, pieces] of pieceSplits(c.reply)) {
      deepStrictEqual(read(c, pieces), c.want, `${c.name}, ${how}`);
    }
  }
});

Deno.test("a constrained list gives out each call as soon as its element is complete", () => {
  const parser = new ToolCallParser(constrained);
  deepStrictEqual(parser.push('[{"name": "get_time", "arguments": {'), { content: "", calls: [] });
  deepStrictEqual(parser.push("}}"), { content: "", calls: [time] });
  deepStrictEqual(parser.push(`, ${WEATHER.slice(0, 20)}`), { content: "", calls: [] });
  deepStrictEqual(parser.push(WEATHER.slice(20)), { content: "", calls: [weather] });
  deepStrictEqual(parser.push("]"), { content: "", calls: [] });
  deepStrictEqual(parser.finish(), { content: "", calls: [] });
  deepStrictEqual(parser.calls, 2);
});
