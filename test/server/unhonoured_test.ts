/**
 * What Kiln does not honour is refused with a 400 in OpenAI's error shape naming the field,
 * through the official `openai` client, streaming and not: `logit_bias`, the legacy `functions`
 * and `function_call`, `tools` whose calls the model's template gives no format to read (here
 * the plain default template, which shows none), a `tool_choice` with no tools to choose from; the forms that ask for nothing
 * (`response_format: {type: "text"}`, `tool_choice: "none"`, empty `tools`, empty `logit_bias`)
 * are answered. What is honoured is in `tools_test.ts`.
 */
import { ok, rejects, strictEqual as equal } from "node:assert/strict";
import OpenAI from "openai";
import { DEFAULT_CHAT_TEMPLATE } from "../../src/text/chat.ts";
import { mockServer } from "../support/server.ts";

const mock = await mockServer({}, {}, DEFAULT_CHAT_TEMPLATE);
// Count what reaches the engine: a refused request must not.
let generated = 0;
const generate = mock.engine.generate.bind(mock.engine);
mock.engine.generate = (request, ctx) => (generated++, generate(request, ctx));
const client = new OpenAI({ baseURL: new URL("v1", mock.url).href, apiKey: "x", maxRetries: 0 });
const messages = [{ role: "user" as const, content: "Hi" }];
const chat = { model: "fortune", messages, max_tokens: 4 };
const completion = { model: "fortune", prompt: "Hi", max_tokens: 4 };

/** The client's error for a 400 naming `param`, with OpenAI's `invalid_request_error` type. */
const refusal = (param: string) => (e: unknown) => {
  ok(e instanceof OpenAI.BadRequestError, String(e));
  equal(e.status, 400);
  equal(e.param, param, e.message);
  equal(e.type, "invalid_request_error");
  ok(e.message.includes(param), e.message);
  return true;
};

const tool = {
  type: "function" as const,
  function: { name: "lookup", parameters: { type: "object", properties: {} } },
};

const CHAT_REFUSED: [string, Record<string, unknown>][] = [
  ["tools", { tools: [tool] }],
  ["tool_choice", { tool_choice: "auto" }],
  ["tool_choice", { tool_choice: "required" }],
  ["tool_choice", { tool_choice: { type: "function", function: { name: "lookup" } } }],
  ["tool_choice", { tools: [tool], tool_choice: { type: "function", function: { name: "f" } } }],
  ["functions", { functions: [tool.function] }],
  ["function_call", { function_call: "auto" }],
  ["logit_bias", { logit_bias: { "65": 5 } }],
];

Deno.test({
  name: "unhonoured fields: 400 naming the field through the openai client, streaming or not",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    try {
      for (const [param, extra] of CHAT_REFUSED) {
        for (const stream of [false, true]) {
          await rejects(
            client.chat.completions.create({ ...chat, ...extra, stream } as never),
            refusal(param),
          );
        }
      }
      await rejects(
        client.completions.create({ ...completion, logit_bias: { "65": -100 } }),
        refusal("logit_bias"),
      );
      await rejects(
        client.completions.create({ ...completion, stream: true, logit_bias: { "1": 1 } }),
        refusal("logit_bias"),
      );
      // The body is OpenAI's error shape, whatever client reads it.
      const res = await fetch(new URL("v1/chat/completions", mock.url), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ...chat, logit_bias: { "65": 5 } }),
      });
      equal(res.status, 400);
      const body = await res.json();
      equal(body.error.type, "invalid_request_error");
      equal(body.error.param, "logit_bias");
      equal(typeof body.error.message, "string");
      ok("code" in body.error);
      // Nothing reached the engine.
      equal(generated, 0);

      // The forms that ask for nothing are honoured as they are.
      const plain = await client.chat.completions.create({
        ...chat,
        response_format: { type: "text" },
        tool_choice: "none",
        tools: [],
        logit_bias: {},
      });
      equal(plain.choices[0]!.message.role, "assistant");
      equal(plain.choices[0]!.finish_reason, "length");
      const text = await client.completions.create({ ...completion, logit_bias: {} });
      equal(text.choices[0]!.finish_reason, "length");
      equal(generated, 2);
    } finally {
      await mock.close();
    }
  },
});
