/**
 * Status codes for requests that can never succeed (400, never the 429 an SDK retries for ever)
 * and how a streamed request ends when its engine fails or its output fills the KV cache (an
 * error event or a finish reason, then `[DONE]` either way), over the mock engine with a small
 * cache (the WebGPU engine's own rules are checked in `engines/webgpu/kv_limits_test.ts` and
 * through `serve` in `test/server/serve_kv_test.ts`).
 */
import { ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import * as out from "../contract/output.ts";
import type { LLMEngineOutput } from "../contract/types.ts";
import { specFiles } from "../adapters/deno/file_source.ts";
import { ChatTemplate } from "../text/chat.ts";
import { loadText } from "../text/load.ts";
import { HttpError } from "./errors.ts";
import { parseJob } from "../openai/requests.ts";
import { mockServer } from "../../test/support/server.ts";
import { FORTUNE } from "../../test/support/fortune_engine.ts";

/** 8 blocks of 16 tokens: a 128-token cache under a 1024-token context. */
const SMALL = { totalBlocks: 8, blockSize: 16, contextLength: 1024 };
const json = { "content-type": "application/json" };

/** Server-sent events of a response, parsed (`[DONE]` kept as a string). */
async function events(res: Response): Promise<unknown[]> {
  const text = await res.text();
  return text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => {
    const d = e.slice(6);
    return d === "[DONE]" ? d : JSON.parse(d);
  });
}

const post = (url: URL, path: string, body: Record<string, unknown>) =>
  fetch(new URL(path, url), {
    method: "POST",
    headers: json,
    body: JSON.stringify({ model: "fortune", ...body }),
  });

Deno.test("a prompt the KV cache can never hold is 400 naming the numbers, streamed or not", async () => {
  const s = await mockServer({}, SMALL);
  try {
    // fortune's tokenizer is byte-level: 200 characters are 200 tokens (and a BOS).
    const prompt = "a".repeat(200);
    for (const stream of [false, true]) {
      const res = await post(s.url, "/v1/completions", { prompt, max_tokens: 4, stream });
      equal(res.status, 400, `stream: ${stream}`);
      equal(res.headers.get("retry-after"), null, "nothing to retry");
      const { error } = await res.json();
      equal(error.type, "invalid_request_error");
      equal(error.param, "prompt");
      ok(/holds 128 tokens \(8 blocks of 16\)/.test(error.message), error.message);
      ok(/-token prompt and one generated token need 13 KV blocks/.test(error.message));
    }
    const chat = await post(s.url, "/v1/chat/completions", {
      messages: [{ role: "user", content: prompt }],
      stream: true,
    });
    equal(chat.status, 400);
    equal((await chat.json()).error.param, "messages");
    const min = await post(s.url, "/v1/completions", {
      prompt: "a".repeat(100),
      max_tokens: 50,
      min_tokens: 40,
    });
    equal(min.status, 400);
    const { error } = await min.json();
    equal(error.param, "min_tokens");
    ok(/plus min_tokens 40 is 14\d tokens, 9 KV blocks/.test(error.message), error.message);
    // The boundary fits, and the server keeps serving.
    const fits = await post(s.url, "/v1/completions", {
      prompt: "a".repeat(100),
      max_tokens: 4,
      ignore_eos: true,
    });
    equal(fits.status, 200);
    equal((await fits.json()).choices[0].finish_reason, "length");
  } finally {
    await s.close();
  }
});

Deno.test("a streamed request whose output fills the cache ends with length, then [DONE]", async () => {
  const s = await mockServer({}, SMALL);
  try {
    const res = await post(s.url, "/v1/completions", {
      prompt: "a".repeat(56),
      max_tokens: 200,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    });
    equal(res.status, 200);
    const got = await events(res);
    equal(got.at(-1), "[DONE]");
    const usage = (got.at(-2) as { usage: Record<string, number> }).usage;
    equal(usage.total_tokens, 128, "prompt and output fill the 128-token cache");
    const finish = got.flatMap((e) =>
      (e as { choices?: { finish_reason: string | null }[] }).choices?.map((c) => c.finish_reason)
        .filter((f) => f !== null) ?? []
    );
    equal(finish.join(), "length");
  } finally {
    await s.close();
  }
});

Deno.test("a streamed failure ends with an error event and then [DONE]", async () => {
  // An engine whose vocabulary is smaller than the tokenizer's: the server checks a prompt's ids
  // against the tokenizer, and the engine refuses 259 only after the 200.
  const s = await mockServer({}, { ...SMALL, vocabSize: 259 });
  try {
    // The engine refuses after the 200 (a token id beyond its vocabulary) ...
    const refused = await post(s.url, "/v1/completions", { prompt: [259], stream: true });
    equal(refused.status, 200);
    const a = await events(refused);
    equal(a.at(-1), "[DONE]");
    equal((a.at(-2) as { error: { type: string } }).error.type, "invalid_request_error");
    // ... or fails mid-stream.
    s.engine.generate = async function* (): AsyncGenerator<LLMEngineOutput> {
      yield out.token(65);
      throw new EngineError("Unknown", "the device went away");
    };
    const failed = await post(s.url, "/v1/completions", { prompt: "Hi", stream: true });
    const b = await events(failed);
    equal(b.length, 3, "a token, the error, [DONE]");
    equal((b[1] as { error: { message: string } }).error.message, "the device went away");
    equal(b[2], "[DONE]");
  } finally {
    await s.close();
  }
});

Deno.test("a chat template over its render budget is 400: the same messages always exceed it", async () => {
  const text = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
  const tight = {
    ...text,
    chat: new ChatTemplate("{% for m in messages %}{{ m.content }}{% endfor %}", false, {
      maxSteps: 3,
    }),
  };
  const body = { model: "fortune", messages: Array(10).fill({ role: "user", content: "x" }) };
  const limits = { maxN: 1, contextLength: 1024, maxLogprobs: 0 };
  throws(() => parseJob(body, true, tight, limits), (e: unknown) => {
    ok(e instanceof EngineError && e.param === "messages", String(e));
    const h = HttpError.from(e);
    ok(h.status === 400 && h.param === "messages", String(e));
    ok(/chat template/.test(h.message), h.message);
    return true;
  });
});
