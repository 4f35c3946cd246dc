/**
 * One rule for what a call is, table-driven over every convention Kiln reads (`<tool_call>`
 * JSON, `[TOOL_CALLS]` list, `[TOOL_CALLS]name[ARGS]`, bare JSON, `<|python_tag|>` JSON, and
 * the constrained reply of `tool_choice` `required` / a named function): arguments that are not
 * a JSON object (an array, a string, text that is not JSON, `null`, a number, a boolean, the JSON
 * text of something other than an object) or missing, and a function the request did not offer,
 * are not calls: the reply's text stays content. The JSON text of an object is the object. The
 * same call twice is two calls (one under `parallel_tool_calls: false`). Each reply is read
 * whole, cut at every character and a character at a time. Planted errors kept as tests: a
 * check that takes any JSON value as arguments, and one that takes any name, each rejected in
 * every convention.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import {
  type CallCheck,
  constrainedConvention,
  parseToolCalls,
  TOOL_CALL_CONVENTIONS,
  type ToolCallConvention,
  ToolCallParser,
  type ToolCallStep,
} from "./tool_calls.ts";
import { pieceSplits, readPieces } from "../../test/support/tool_reads.ts";

/** The request's functions. */
const NAMES = new Set(["get_time", "get_weather"]);
const CHECK: CallCheck = { names: NAMES };

/** One call as a convention writes it: `args` is the arguments' text (absent: no arguments). */
interface Written {
  name: string;
  args?: string | undefined;
}

/** How one convention writes a reply of calls. */
interface Writer {
  label: string;
  convention: ToolCallConvention;
  write(calls: Written[]): string;
}

const marker = (m: string) => TOOL_CALL_CONVENTIONS.get(m)!;
/** `{"name": ..., "<key>": ...}`, the arguments' text as given (it may not be JSON). */
const entry = (c: Written, key = "arguments") =>
  `{"name": ${JSON.stringify(c.name)}${c.args === undefined ? "" : `, "${key}": ${c.args}`}}`;

const WRITERS: Writer[] = [
  {
    label: "<tool_call> JSON",
    convention: marker("<tool_call>"),
    write: (cs) => cs.map((c) => `<tool_call>\n${entry(c)}\n</tool_call>`).join("\n"),
  },
  {
    label: "[TOOL_CALLS] list",
    convention: marker("[TOOL_CALLS]"),
    write: (cs) => `[TOOL_CALLS][${cs.map((c) => entry(c)).join(", ")}]`,
  },
  {
    label: "[TOOL_CALLS]name[ARGS]",
    convention: marker("[ARGS]"),
    write: (cs) =>
      cs.map((c) => `[TOOL_CALLS]${c.name}${c.args === undefined ? "" : `[ARGS]${c.args}`}`)
        .join(""),
  },
  {
    label: "bare JSON",
    convention: marker('"parameters"'),
    write: (cs) => cs.map((c) => entry(c, "parameters")).join("; "),
  },
  {
    label: "<|python_tag|> JSON",
    convention: marker('"parameters"'),
    write: (cs) => `<|python_tag|>${cs.map((c) => entry(c, "parameters")).join("; ")}`,
  },
  {
    label: "constrained",
    convention: constrainedConvention(),
    write: (cs) => cs.length === 1 ? entry(cs[0]!) : `[${cs.map((c) => entry(c)).join(", ")}]`,
  },
];

/** Arguments that do not make a call, as the model writes them. */
const NOT_ARGUMENTS: (string | undefined)[] = [
  "[1, 2]",
  "[]",
  '"x"',
  '"not json"',
  "not json",
  "null",
  "3",
  "true",
  '"[1, 2]"',
  '"null"',
  '"{\\"tz\\": "',
  undefined,
];

/** Arguments that make a call, and the JSON text of the object the call carries. */
const ARGUMENTS: [string, string][] = [
  ["{}", "{}"],
  ['{"city": "Zürich", "days": [1, 2]}', '{"city":"Zürich","days":[1,2]}'],
  ['"{\\"tz\\": \\"UTC\\"}"', '{"tz":"UTC"}'],
];

/** A reply, what it must give, and the `maxCalls` it is read with. */
interface Case {
  name: string;
  reply: string;
  want: ToolCallStep;
  maxCalls?: number;
}

/** The cases of one convention. */
function cases(w: Writer): Case[] {
  const content = (name: string, calls: Written[]): Case => {
    const reply = w.write(calls);
    return { name, reply, want: { content: reply, calls: [] } };
  };
  const time = { name: "get_time", arguments: '{"tz":"UTC"}' };
  const twice = w.write([{ name: "get_time", args: '{"tz": "UTC"}' }, {
    name: "get_time",
    args: '{"tz": "UTC"}',
  }]);
  return [
    ...NOT_ARGUMENTS.map((a) => content(`arguments ${a}`, [{ name: "get_time", args: a }])),
    ...ARGUMENTS.map(([args, json]): Case => ({
      name: `arguments ${args}`,
      reply: w.write([{ name: "get_weather", args }]),
      want: { content: "", calls: [{ name: "get_weather", arguments: json }] },
    })),
    content("an unknown function", [{ name: "get_stock", args: "{}" }]),
    content("a name in another case", [{ name: "Get_Time", args: "{}" }]),
    content("an empty name", [{ name: "", args: "{}" }]),
    { name: "the same call twice", reply: twice, want: { content: "", calls: [time, time] } },
    {
      name: "the same call twice, parallel_tool_calls false",
      reply: twice,
      want: { content: "", calls: [time] },
      maxCalls: 1,
    },
  ];
}

/** Read `pieces` in order with one parser; the content and calls of all steps. */
function stream(w: Writer, c: Case, check: CallCheck, pieces: string[]): ToolCallStep {
  return readPieces(new ToolCallParser(w.convention, c.maxCalls, check), pieces);
}

/** The cases each convention gets wrong under `check`: whole, cut anywhere, char by char. */
function violations(check: CallCheck): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const same = (a: ToolCallStep, b: ToolCallStep) => JSON.stringify(a) === JSON.stringify(b);
  for (const w of WRITERS) {
    const wrong: string[] = [];
    for (const c of cases(w)) {
      const reads: [string, ToolCallStep][] = [
        ["whole", parseToolCalls(w.convention, c.reply, c.maxCalls, false, check)],
        ...pieceSplits(c.reply).map(([how, p]): [string, ToolCallStep] => [
          how,
          stream(w, c, check, p),
        ]),
      ];
      const bad = reads.find(([, got]) => !same(got, c.want));
      if (bad) wrong.push(`${c.name} (${bad[0]}): ${JSON.stringify(bad[1])}`);
    }
    if (wrong.length > 0) out.set(w.label, wrong);
  }
  return out;
}

Deno.test("tool-call rules: every convention, whole, cut anywhere and char by char", () => {
  deepStrictEqual(Object.fromEntries(violations(CHECK)), {});
});

Deno.test("planted error: any JSON value taken as arguments is caught in every convention", () => {
  const anyValue: CallCheck = {
    names: NAMES,
    args: (v) => v === undefined ? undefined : JSON.stringify(v),
  };
  const caught = violations(anyValue);
  deepStrictEqual([...caught.keys()], WRITERS.map((w) => w.label));
  for (const [label, wrong] of caught) {
    ok(wrong.some((v) => v.startsWith("arguments [1, 2]")), `${label}: ${wrong[0]}`);
  }
});

Deno.test("planted error: a check that takes any function name is caught in every convention", () => {
  const anyName: CallCheck = { names: { has: () => true } };
  const caught = violations(anyName);
  deepStrictEqual([...caught.keys()], WRITERS.map((w) => w.label));
  for (const [label, wrong] of caught) {
    ok(wrong.every((v) => /^(an unknown function|a name in another case) /.test(v)), label);
  }
});
