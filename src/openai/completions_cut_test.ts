/**
 * `openModel`'s `chat.completions.create` (the in-process `ChatCompletions`) when `max_tokens`
 * cuts a reply constrained to calls (`tool_choice: "required"`) inside its second call: whole and
 * streamed, the first call is kept, the cut one dropped, no JSON is content and the finish is
 * `length`; the stream sends the call (header, then arguments) and no chunk with nothing in it
 * (the first carries the role, the last the finish).
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { qwen } from "../../test/support/qwen_text.ts";
import { ScriptedEngine } from "../../test/support/scripted_engine.ts";
import {
  type ChatCompletionChunk,
  type ChatCompletionRequest,
  ChatCompletions,
} from "./completions.ts";

const FIRST = '{"name": "get_time", "arguments": {"timezone": "UTC"}}';
const REPLY = `[${FIRST}, {"name": "get_time", "arguments": {"timezone": "CET"}}]`;
/** Cut at the second call's `"arguments"`. */
const CUT = qwen.tokenizer.encode(REPLY.slice(0, REPLY.lastIndexOf('"arguments"')), {
  addSpecial: false,
}).length;

const body = {
  messages: [{ role: "user", content: "Time?" }],
  tools: [{ type: "function", function: { name: "get_time", parameters: { type: "object" } } }],
  tool_choice: "required",
  max_tokens: CUT,
} satisfies ChatCompletionRequest;

Deno.test("openModel: a reply max_tokens cuts keeps its complete calls, whole and streamed", async () => {
  const engine = new ScriptedEngine("qwen", qwen.tokenizer);
  engine.reply = REPLY;
  const chat = new ChatCompletions({ engine, text: qwen, model: "qwen", contextLength: 4096 });
  const whole = await chat.create(body);
  const message = whole.choices[0]!.message;
  equal(whole.choices[0]!.finish_reason, "length");
  equal(message.content, null);
  deepStrictEqual(message.tool_calls?.map((c) => c.function), [
    { name: "get_time", arguments: '{"timezone":"UTC"}' },
  ]);
  equal(whole.usage.completion_tokens, CUT);

  const chunks: ChatCompletionChunk[] = [];
  for await (const c of await chat.create({ ...body, stream: true })) chunks.push(c);
  const choices = chunks.map((c) => c.choices[0]!);
  equal(choices[0]!.delta.role, "assistant");
  equal(choices.at(-1)!.finish_reason, "length");
  // Role, the call's header, its arguments, the finish: nothing for the tokens held back.
  equal(chunks.length, 4, JSON.stringify(chunks.map((c) => c.choices[0]!.delta)));
  ok(choices.every((c) => c.delta.content === undefined), "no content");
  deepStrictEqual(choices.flatMap((c) => c.delta.tool_calls ?? []).map((d) => d.function), [
    { name: "get_time", arguments: "" },
    { arguments: '{"timezone":"UTC"}' },
  ]);
});
