/**
 * Usage and `dynamo_frontend_*` equal what was generated, however a request ends, on every
 * OpenAI route (chat, completions, Responses), whole and streamed: EOS, `max_tokens`, a stop
 * string (completed mid-chunk, across a chunk edge: the completing chunk's tokens count), a
 * tool call and a guided reply's end. The engine hands out 5 tokens a chunk; the expected count
 * is made here from the script and fortune's tokenizer (`expectedTokens`), checked against the
 * tokens the engine handed out, and the streamed text is tokenized and compared too. The
 * planted error: usage leaving out the tokens of the chunk that completed the stop string (a
 * mutant between client and server) must be rejected by the same check.
 */
import { ok, rejects, strictEqual as equal } from "node:assert/strict";
import {
  bodyOf,
  call,
  checkCounted,
  expectedTokens,
  type Route,
  type Seen,
  settled,
  type UsageServer,
  usageServer,
  type Want,
} from "../support/usage_probe.ts";
import { dropStopChunk } from "../support/usage_mutants.ts";

const CHUNK = 5;
const SCRIPT = "Fortune favours the bold, and the bold read on.";
const QWEN3 = new URL("../fixtures/chat_templates/Qwen-Qwen3-0.6B.jinja", import.meta.url);
const FORMS = [false, true];

/** Run `fields` on `route` (whole or streamed), and check what it was counted as. */
async function ending(
  s: UsageServer,
  route: Route,
  stream: boolean,
  fields: Record<string, unknown>,
  want: Omit<Want, "usage" | "status">,
): Promise<Seen> {
  const before = await s.counts();
  const seen = await call(s, route, bodyOf(route, stream, fields));
  const after = await settled(s, before);
  const label = `${route} ${stream ? "streamed" : "whole"}`;
  checkCounted(s, label, seen, { ...want, status: "success", usage: true }, before, after);
  return seen;
}

const tokenCount = (s: UsageServer, text: string) =>
  s.tokenizer.encode(text, { addSpecial: false }).length;

Deno.test("usage and metrics equal the tokens generated: EOS and max_tokens, every route", async () => {
  const s = await usageServer(CHUNK);
  try {
    s.engine.plan = { text: SCRIPT, end: { kind: "eos" } };
    const all = expectedTokens(s.tokenizer, SCRIPT, CHUNK, {});
    for (const route of ["chat", "completions", "responses"] as const) {
      for (const stream of FORMS) {
        const finish = route === "responses" ? "completed" : "stop";
        const seen = await ending(s, route, stream, {}, { tokens: all, finish });
        equal(seen.text, SCRIPT);
        equal(tokenCount(s, seen.text), all, "the streamed text, tokenized");
        const max = route === "responses" ? { max_output_tokens: 12 } : { max_tokens: 12 };
        const cut = await ending(s, route, stream, max, {
          tokens: expectedTokens(s.tokenizer, SCRIPT, CHUNK, { maxTokens: 12 }),
          finish: route === "responses" ? "incomplete" : "length",
        });
        equal(tokenCount(s, cut.text), 12, "the streamed text, tokenized");
      }
    }
  } finally {
    await s.close();
  }
});

/** The stop-string endings, through `s` as it is (or through a mutant in `s.fetch`). */
async function stopStrings(s: UsageServer): Promise<void> {
  s.engine.plan = { text: SCRIPT, end: { kind: "eos" } };
  // "bold" ends mid-chunk; "the bo" spans a chunk edge; both leave tokens in the chunk after them.
  for (const stop of ["bold", "the bo"]) {
    const tokens = expectedTokens(s.tokenizer, SCRIPT, CHUNK, { stop });
    const upTo = tokenCount(s, SCRIPT.slice(0, SCRIPT.indexOf(stop) + stop.length));
    ok(upTo % CHUNK !== 0 && tokens > upTo, `${stop}: completed inside a chunk`);
    for (const route of ["chat", "completions"] as const) {
      for (const stream of FORMS) {
        const seen = await ending(s, route, stream, { stop: [stop] }, { tokens, finish: "stop" });
        equal(seen.text, SCRIPT.slice(0, SCRIPT.indexOf(stop)));
      }
    }
  }
}

Deno.test("usage and metrics count the chunk that completed a stop string", async () => {
  const s = await usageServer(CHUNK);
  try {
    await stopStrings(s);
  } finally {
    await s.close();
  }
});

Deno.test("planted error: usage leaving out the stop string's completing chunk is rejected", async () => {
  const s = await usageServer(CHUNK);
  try {
    s.fetch = dropStopChunk(CHUNK);
    await rejects(stopStrings(s), /chat whole: usage completion tokens/);
  } finally {
    await s.close();
  }
});

Deno.test("usage and metrics at a tool call's end and a guided reply's end", async () => {
  const s = await usageServer(CHUNK, QWEN3);
  try {
    const callText =
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    s.engine.plan = { text: callText, end: { kind: "eos" } };
    const tools = [{
      type: "function",
      function: { name: "get_weather", parameters: { type: "object" } },
    }];
    const tokens = expectedTokens(s.tokenizer, callText, CHUNK, {});
    for (const stream of FORMS) {
      const seen = await ending(s, "chat", stream, { tools }, { tokens, finish: "tool_calls" });
      equal(seen.calls.join(), "get_weather");
    }
    const json = '{"city": "Paris"}';
    s.engine.plan = { text: json, end: { kind: "eos" } };
    const response_format = {
      type: "json_schema",
      json_schema: { name: "city", schema: { type: "object" } },
    };
    const guided = expectedTokens(s.tokenizer, json, CHUNK, {});
    for (const stream of FORMS) {
      const seen = await ending(s, "chat", stream, { response_format }, {
        tokens: guided,
        finish: "stop",
      });
      equal(seen.text, json);
    }
  } finally {
    await s.close();
  }
});
