/**
 * `/v1/completions` with an array of prompts, through the `openai` client over the mock engine
 * (whose output depends only on the prompt, so each choice shows which prompt it ran): one choice
 * per prompt × n, numbered as OpenAI numbers them (prompt i, sample j: index i·n + j), whole and
 * streamed, usage summed, `echo` and `logprobs` per prompt, and the bounds refused by name.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import OpenAI from "openai";
import { mockServer } from "../../test/support/server.ts";

const s = await mockServer();
const client = new OpenAI({ baseURL: new URL("v1", s.url).href, apiKey: "x", maxRetries: 0 });
const base = { model: "fortune", max_tokens: 5, ignore_eos: true };
const one = async (prompt: string | number[]) =>
  (await client.completions.create({ ...base, prompt })).choices[0]!.text;

const refusal = (param: string) => (e: unknown) => {
  ok(e instanceof OpenAI.BadRequestError, String(e));
  strictEqual(e.param, param, e.message);
  return true;
};

Deno.test({
  name: "prompt arrays: one choice per prompt × n, indexed i·n + j, whole and streamed",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const prompts = ["Hi", "Yo there", "Z"];
    const alone = await Promise.all(prompts.map(one));
    ok(new Set(alone).size === 3, "each prompt has its own text");
    const whole = await client.completions.create({ ...base, prompt: prompts, n: 2 });
    deepStrictEqual(whole.choices.map((c) => c.index), [0, 1, 2, 3, 4, 5]);
    deepStrictEqual(whole.choices.map((c) => c.text), alone.flatMap((t) => [t, t]));
    const promptTokens = (await Promise.all(prompts.map((p) =>
      client.completions.create({ ...base, prompt: p, max_tokens: 1 })
    ))).reduce((sum, r) =>
      sum + r.usage!.prompt_tokens, 0);
    deepStrictEqual(whole.usage, {
      prompt_tokens: promptTokens,
      completion_tokens: 30,
      total_tokens: promptTokens + 30,
    });

    // Token arrays: the same prompts as ids.
    const ids = await Promise.all(
      prompts.map(async (prompt) =>
        (await (await fetch(new URL("/tokenize", s.url), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ prompt }),
        })).json()).tokens as number[]
      ),
    );
    const byIds = await client.completions.create({ ...base, prompt: ids, n: 2 });
    deepStrictEqual(byIds.choices.map((c) => c.text), whole.choices.map((c) => c.text));
    strictEqual(
      (await client.completions.create({ ...base, prompt: ids[1]! })).choices[0]!.text,
      alone[1],
    );

    const stream = await client.completions.create({
      ...base,
      prompt: prompts,
      n: 2,
      stream: true,
      stream_options: { include_usage: true },
    });
    const texts = ["", "", "", "", "", ""];
    let usage;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) texts[c.index] += c.text;
    }
    deepStrictEqual(texts, alone.flatMap((t) => [t, t]));
    deepStrictEqual(usage, whole.usage);

    // echo and logprobs are per prompt.
    const echoed = await client.completions.create({ ...base, prompt: prompts, echo: true });
    deepStrictEqual(echoed.choices.map((c) => c.text), prompts.map((p, i) => p + alone[i]));
    const scored = async (prompt: string | string[]) =>
      (await client.completions.create({ ...base, prompt, logprobs: 1 })).choices.map((c) =>
        c.logprobs
      );
    deepStrictEqual(
      await scored(prompts),
      (await Promise.all(prompts.map(scored))).flat(),
    );
  },
});

Deno.test({
  name: "prompt arrays: empty, too many for n, ids out of the vocabulary are 400 naming the field",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    try {
      const create = (prompt: unknown, extra: Record<string, unknown> = {}) =>
        client.completions.create({ ...base, prompt, ...extra } as never);
      for (const stream of [false, true]) {
        await rejects(create([], { stream }), refusal("prompt"));
        await rejects(create([[72], [105, 260]], { stream }), refusal("prompt"));
        await rejects(create([72, 9999], { stream }), refusal("prompt"));
        await rejects(create(["a", "b", "c"], { n: 3, stream }), refusal("n"));
        await rejects(create(Array(9).fill("a"), { stream }), refusal("prompt"));
      }
      const res = await fetch(new URL("/v1/completions", s.url), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ...base, prompt: [[72], [105, 260]] }),
      });
      strictEqual(res.status, 400);
      ok((await res.json()).error.message.startsWith("prompt[1][1]: "));
    } finally {
      await s.close();
    }
  },
});
