/**
 * `serve --kv-blocks 8` on the fortune model (a 128-token cache under its 1024-token context),
 * driven over HTTP as the hostile report did: a prompt the cache can never hold is a 400, a
 * streamed request whose output fills the cache ends with finish reason `length` and `[DONE]`
 * while a short request sent meanwhile completes, and a streamed failure ends with an error
 * event and `[DONE]`.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { startServer } from "./server.ts";

const server = await startServer(["--kv-blocks", "8"]);
const post = (path: string, body: Record<string, unknown>) =>
  fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "fortune", ...body }),
  });

/** Parse server-sent events as they arrive; `onEvent` sees each (`[DONE]` as a string). */
async function events(res: Response, onEvent: (e: unknown) => void = () => {}): Promise<unknown[]> {
  const all: unknown[] = [];
  let buffer = "";
  for await (const text of res.body!.pipeThrough(new TextDecoderStream())) {
    buffer += text;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (!line.startsWith("data: ")) continue;
      const data = line.slice(6);
      const e = data === "[DONE]" ? data : JSON.parse(data);
      all.push(e);
      onEvent(e);
    }
  }
  return all;
}

type Chunk = {
  choices?: { text: string; finish_reason: string | null }[];
  usage?: { prompt_tokens: number; completion_tokens: number };
  error?: { type: string; message: string };
};

Deno.test("serve: a prompt the KV cache can never hold is 400 naming the numbers, streamed or not", async () => {
  for (const stream of [false, true]) {
    const res = await post("/v1/completions", { prompt: "x".repeat(150), max_tokens: 4, stream });
    equal(res.status, 400);
    const { error } = await res.json();
    equal(error.type, "invalid_request_error");
    ok(
      /151-token prompt and one generated token need 10 KV blocks/.test(error.message),
      error.message,
    );
    ok(/holds 128 tokens \(8 blocks of 16\)/.test(error.message), error.message);
  }
});

Deno.test("serve: a streamed request that fills the cache ends with length and [DONE]; one sent meanwhile completes", async () => {
  // 56 characters and BOS: 57 tokens, and 200 more would need 257 of the cache's 128.
  const res = await post("/v1/completions", {
    prompt: "Fortune favours the bold; patience favours everyone else",
    max_tokens: 200,
    ignore_eos: true,
    stream: true,
    stream_options: { include_usage: true },
  });
  equal(res.status, 200);
  let short: Promise<Response> | undefined;
  const got = await events(res, () => {
    short ??= post("/v1/completions", { prompt: "Luck", max_tokens: 5, ignore_eos: true });
  }) as (Chunk | string)[];
  equal(got.at(-1), "[DONE]");
  const chunks = got.slice(0, -1) as Chunk[];
  const finish = chunks.flatMap((c) => c.choices ?? []).map((c) => c.finish_reason);
  equal(finish.filter((f) => f !== null).join(), "length");
  const usage = chunks.at(-1)!.usage!;
  equal(usage.prompt_tokens, 57);
  equal(usage.completion_tokens, 128 - 57, "it ends when prompt and output fill the cache");
  ok(short, "the long request streamed");
  const s = await (await short).json();
  equal(s.choices[0].finish_reason, "length");
  equal(s.usage.completion_tokens, 5);
});

Deno.test("serve: a streamed failure ends with an error event and [DONE]", async () => {
  // Stop token ids are taken as given; the engine refuses one beyond the vocabulary after the
  // 200 (a prompt's ids are checked before it).
  const res = await post("/v1/completions", { prompt: "You", stop_token_ids: [300], stream: true });
  equal(res.status, 200);
  const got = await events(res) as (Chunk | string)[];
  equal(got.length, 2, JSON.stringify(got));
  equal((got[0] as Chunk).error?.type, "invalid_request_error");
  ok(/300 >= vocab size 260/.test((got[0] as Chunk).error!.message));
  equal(got[1], "[DONE]");
  // The server keeps serving.
  const after = await post("/v1/completions", { prompt: "You", max_tokens: 3 });
  equal(after.status, 200);
  await after.body?.cancel();
});

Deno.test("serve --kv-blocks: SIGTERM still drains and exits 0", async () => {
  const { code, stderr } = await server.stop();
  equal(code, 0, stderr);
});
