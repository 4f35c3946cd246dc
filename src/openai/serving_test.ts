/**
 * The serving layer on its own: a job of several choices run by a scripted engine whose reply to
 * a prompt is known in advance (the prompt's bytes reversed, one token a chunk), gathered whole
 * and streamed, both against that reply and the count of tokens it made; the merge of choices
 * (a planted merge that stops at the first choice's end is rejected); and the KV-fit check
 * against the cache arithmetic done by hand.
 */
import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import type { GenerateContext, LLMEngine } from "../contract/engine.ts";
import { EngineError } from "../contract/errors.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "../contract/types.ts";
import { specFiles } from "../adapters/deno/file_source.ts";
import { loadText } from "../text/load.ts";
import { FORTUNE } from "../../test/support/fortune_engine.ts";
import { parseJob } from "./requests.ts";
import { merged, Serving } from "./serving.ts";

const text = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
const limits = { maxN: 8, contextLength: 2048, maxLogprobs: 20 };

/** Replies to a prompt with its byte tokens (ids under 256) reversed, one a chunk, then stops. */
const reversing: LLMEngine = {
  start: () => Promise.reject(new Error("not used")),
  cleanup: () => Promise.resolve(),
  async *generate(request: PreprocessedRequest, _ctx: GenerateContext) {
    const ids = request.token_ids.filter((id) => id < 256).reverse();
    for (const [k, id] of ids.entries()) {
      await Promise.resolve(); // let the other choices run between tokens
      const out: LLMEngineOutput = { token_ids: [id] };
      if (k === ids.length - 1) out.finish_reason = "stop";
      yield out;
    }
  },
};

const PROMPTS = ["abc", "kiln serves", "xy"];
const reversed = (s: string) => [...s].reverse().join("");
const job = (stream: boolean) =>
  parseJob(
    {
      model: "fortune",
      prompt: PROMPTS,
      n: 2,
      max_tokens: 32,
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
    },
    false,
    text,
    limits,
  );
/** Choice `k` is sample `k % n` of prompt `⌊k / n⌋` (OpenAI's numbering). */
const expected = Array.from({ length: 6 }, (_, k) => reversed(PROMPTS[Math.floor(k / 2)]!));
const generated = PROMPTS.reduce((sum, p) => sum + 2 * p.length, 0);

Deno.test("Serving: six choices whole and streamed are each their prompt reversed, usage the tokens made", async () => {
  const serving = new Serving({ engine: reversing, text });
  const signal = new AbortController().signal;
  const whole = await serving.whole(job(false), signal) as {
    choices: { index: number; text: string; finish_reason: string }[];
    usage: { completion_tokens: number };
  };
  deepStrictEqual(whole.choices.map((c) => c.text), expected);
  deepStrictEqual(whole.choices.map((c) => c.finish_reason), expected.map(() => "stop"));
  equal(whole.usage.completion_tokens, generated);
  const texts = expected.map(() => "");
  let usage: { completion_tokens: number } | undefined;
  for await (const chunk of await serving.stream(job(true), signal)) {
    const c = chunk as { choices: { index: number; text: string }[]; usage?: typeof usage };
    for (const choice of c.choices) texts[choice.index] += choice.text;
    if (c.usage) usage = c.usage;
  }
  deepStrictEqual(texts, expected);
  equal(usage?.completion_tokens, generated);
});

/** Sources of different lengths, each yielding between the others' items. */
async function* counting(name: string, length: number) {
  for (let i = 0; i < length; i++) {
    await Promise.resolve();
    yield `${name}${i}`;
  }
}

/** Whether `merge` gives every item of every source, each source's order kept. */
async function mergesAll(
  merge: (sources: AsyncGenerator<string>[]) => AsyncGenerator<string>,
): Promise<void> {
  const got: string[] = [];
  for await (const item of merge([counting("a", 1), counting("b", 4), counting("c", 2)])) {
    got.push(item);
  }
  for (const [name, length] of [["a", 1], ["b", 4], ["c", 2]] as const) {
    const want = Array.from({ length }, (_, i) => `${name}${i}`);
    deepStrictEqual(got.filter((s) => s[0] === name), want);
  }
  equal(got.length, 7);
}

/** A planted merge: ends as soon as any source ends, dropping what the others had left. */
async function* stopsEarly<T>(sources: AsyncGenerator<T>[]): AsyncGenerator<T> {
  const next = sources.map((s) => s.next());
  while (true) {
    const [k, r] = await Promise.race(next.map((p, i) => p.then((r) => [i, r] as const)));
    if (r.done) return;
    yield r.value;
    next[k] = sources[k]!.next();
  }
}

Deno.test("merged gives every choice's parts in its order; planted error: a merge stopping at the first end is rejected", async () => {
  await mergesAll(merged);
  let rejected = false;
  await mergesAll(stopsEarly).catch(() => (rejected = true));
  ok(rejected, "the planted merge passed the check");
});

Deno.test("Serving.checkFits refuses exactly the prompts a 2 × 4-token cache cannot hold", () => {
  const serving = new Serving({ engine: reversing, text, kv: { numBlocks: 2, blockSize: 4 } });
  // A prompt of p tokens and one generated token need ceil((p + 1) / 4) blocks: p = 7 fits in 2.
  const ids = (p: number) => Array.from({ length: p }, (_, i) => 97 + i);
  const fit = (p: number, extra = {}) =>
    parseJob({ model: "fortune", prompt: ids(p), ...extra }, false, text, limits);
  serving.checkFits(fit(7), "prompt");
  const refused = (e: unknown, param: string) =>
    e instanceof EngineError && e.type === "InvalidArgument" && e.param === param;
  throws(() => serving.checkFits(fit(8), "prompt"), (e) => refused(e, "prompt"));
  // min_tokens 2 beside a 7-token prompt needs 9 tokens, 3 blocks.
  throws(
    () => serving.checkFits(fit(7, { min_tokens: 2 }), "prompt"),
    (e) => refused(e, "min_tokens"),
  );
  serving.checkFits(fit(6, { min_tokens: 2 }), "prompt");
});
