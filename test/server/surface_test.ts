/**
 * The common surface clients expect, against `serve` on the fortune model (the real engine), as
 * the `openai` client calls it: `models.retrieve` (and its 404), completions with an array of
 * prompts and `n` (choices indexed prompt × n as OpenAI numbers them, each prompt's text its own
 * greedy continuation, streamed too), `store: false`, `metadata`, `user` and `service_tier`
 * accepted with no effect (`store: true` refused by name), and vLLM's `/tokenize` and
 * `/detokenize` through `fetch`.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import OpenAI from "openai";
import { startServer } from "./server.ts";

const KEY = "surface-key";
const server = await startServer(["--api-key", KEY]);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0 });
const post = async (path: string, body: unknown) => {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
};
const greedy = { model: "fortune", max_tokens: 8, temperature: 0, ignore_eos: true };
const PROMPTS = ["You will", "A friend"];

Deno.test("serve: models.retrieve gives the list's entry; another name is NotFoundError", async () => {
  const model = await client.models.retrieve("fortune");
  const list = await client.models.list();
  deepStrictEqual({ ...model }, { ...list.data[0] });
  strictEqual(model.id, "fortune");
  await rejects(client.models.retrieve("Qwen/Qwen3-0.6B"), (e: unknown) => {
    ok(e instanceof OpenAI.NotFoundError, String(e));
    strictEqual(e.code, "model_not_found");
    return true;
  });
});

Deno.test("serve: a prompt array with n = 2: index i·2 + j is prompt i's, whole and streamed", async () => {
  const alone = await Promise.all(
    PROMPTS.map((prompt) => client.completions.create({ ...greedy, prompt })),
  );
  const texts = alone.map((r) => r.choices[0]!.text);
  ok(texts[0] !== texts[1], "the prompts continue differently");
  const whole = await client.completions.create({ ...greedy, prompt: PROMPTS, n: 2 });
  deepStrictEqual(whole.choices.map((c) => c.index), [0, 1, 2, 3]);
  deepStrictEqual(whole.choices.map((c) => c.text), texts.flatMap((t) => [t, t]));
  const promptTokens = alone[0]!.usage!.prompt_tokens + alone[1]!.usage!.prompt_tokens;
  deepStrictEqual(whole.usage, {
    prompt_tokens: promptTokens,
    completion_tokens: 32,
    total_tokens: promptTokens + 32,
  });
  const stream = await client.completions.create({
    ...greedy,
    prompt: PROMPTS,
    n: 2,
    stream: true,
    stream_options: { include_usage: true },
  });
  const streamed = ["", "", "", ""];
  let usage;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) streamed[c.index] += c.text;
  }
  deepStrictEqual(streamed, whole.choices.map((c) => c.text));
  deepStrictEqual(usage, whole.usage);
});

Deno.test("serve: store false, metadata, user, service_tier have no effect; store true is refused", async () => {
  const messages = [{ role: "user" as const, content: "Tell me a fortune" }];
  const chat = { model: "fortune", messages, max_tokens: 6, temperature: 0 };
  const plain = await client.chat.completions.create(chat);
  const tagged = await client.chat.completions.create({
    ...chat,
    store: false,
    metadata: { team: "kiln" },
    user: "user-1",
    service_tier: "auto",
  });
  strictEqual(tagged.choices[0]!.message.content, plain.choices[0]!.message.content);
  strictEqual(tagged.service_tier, "default");
  ok(!("service_tier" in plain));
  await rejects(client.chat.completions.create({ ...chat, store: true }), (e: unknown) => {
    ok(e instanceof OpenAI.BadRequestError, String(e));
    strictEqual(e.param, "store");
    return true;
  });
});

Deno.test("serve: /tokenize counts a completion's prompt; /detokenize gives its text back", async () => {
  const t = await post("/tokenize", { model: "fortune", prompt: "You will" });
  strictEqual(t.status, 200);
  const completion = await client.completions.create({ ...greedy, prompt: "You will" });
  strictEqual(t.body.count, completion.usage!.prompt_tokens);
  strictEqual(t.body.max_model_len, 1024);
  strictEqual(t.body.token_strs, null);
  const d = await post("/detokenize", { tokens: t.body.tokens });
  deepStrictEqual(d, { status: 200, body: { prompt: "<bos>You will" } });
  // The tokens of a completion's text, as a prompt, continue it.
  const ids = (await post("/tokenize", { prompt: "You will" })).body.tokens;
  const byIds = await client.completions.create({ ...greedy, prompt: ids });
  strictEqual(byIds.choices[0]!.text, completion.choices[0]!.text);
  const bad = await post("/detokenize", { tokens: [1, 260] });
  strictEqual(bad.status, 400);
  strictEqual(bad.body.error.param, "tokens");
});

Deno.test("serve: SIGTERM after the surface checks exits 0", async () => {
  const { code, stderr } = await server.stop();
  strictEqual(code, 0, stderr);
});
