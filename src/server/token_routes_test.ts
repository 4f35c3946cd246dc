/**
 * `POST /tokenize` and `POST /detokenize` over real sockets, in vLLM's shapes, behind the same
 * guards as the completions: the API key (401), the JSON media type (415), the body limit (413),
 * POST only (405), the model's name (404 `model_not_found`), the `Host` check (400) and the
 * drain (503); a bad id is a 400 naming `tokens`. They are not counted as completion requests.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { mockServer } from "../../test/support/server.ts";

const KEY = "k";
const s = await mockServer({ apiKey: KEY, maxBodyBytes: 4096 });
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(new URL(path, s.url), {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
/** The response's status, and its body's `error` (undefined for a 2xx). */
const answer = async (res: Response) => {
  const body = await res.json();
  return { status: res.status, body, error: body.error };
};

Deno.test({
  name: "/tokenize and /detokenize: vLLM's shapes, a round trip, ids named when bad",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const t = await answer(await post("/tokenize", { model: "fortune", prompt: "Hi" }));
    strictEqual(t.status, 200);
    deepStrictEqual(t.body, {
      count: 3,
      max_model_len: 4096,
      tokens: [256, 72, 105],
      token_strs: null,
    });
    const chat = await answer(
      await post("/tokenize", {
        messages: [{ role: "user", content: "Hi" }],
        return_token_strs: true,
      }),
    );
    strictEqual(chat.status, 200);
    strictEqual(chat.body.count, chat.body.tokens.length);
    ok(chat.body.token_strs.join("").includes("Hi"), chat.body.token_strs.join(""));
    // The prompt a chat completion of the same messages runs.
    const completion = await answer(
      await post("/v1/chat/completions", {
        model: "fortune",
        messages: [{ role: "user", content: "Hi" }],
        max_tokens: 1,
      }),
    );
    strictEqual(completion.body.usage.prompt_tokens, chat.body.count);
    const d = await answer(await post("/detokenize", { model: "fortune", tokens: t.body.tokens }));
    deepStrictEqual(d, { status: 200, body: { prompt: "<bos>Hi" }, error: undefined });
    const bad = await answer(await post("/detokenize", { tokens: [72, 4096] }));
    strictEqual(bad.status, 400);
    strictEqual(bad.error.param, "tokens");
    ok(bad.error.message.startsWith("tokens[1]: "), bad.error.message);
    const unknown = await answer(await post("/tokenize", { prompt: "Hi", truncate: 3 }));
    strictEqual(unknown.status, 400);
    strictEqual(unknown.error.param, "truncate");
  },
});

/** `dynamo_frontend_requests_total`, summed over its labels. */
async function requests(): Promise<number> {
  const res = await fetch(new URL("/metrics", s.url), {
    headers: { authorization: `Bearer ${KEY}` },
  });
  const lines = (await res.text()).match(/^dynamo_frontend_requests_total\{.*\} \d+$/gm) ?? [];
  return lines.reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0);
}

Deno.test({
  name: "/tokenize and /detokenize: the completions' guards, and no completion counted",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    try {
      const before = await requests();
      for (const path of ["/tokenize", "/detokenize"]) {
        const body = path === "/tokenize" ? { prompt: "Hi" } : { tokens: [72] };
        const status = async (res: Response) => (await res.body?.cancel(), res.status);
        strictEqual(await status(await post(path, body, { authorization: "Bearer no" })), 401);
        strictEqual(await status(await post(path, body, { "content-type": "text/plain" })), 415);
        strictEqual(await status(await post(path, { prompt: "x".repeat(5000) })), 413);
        const get = await fetch(new URL(path, s.url), {
          headers: { authorization: `Bearer ${KEY}` },
        });
        strictEqual(get.status, 405);
        strictEqual(get.headers.get("allow"), "POST");
        await get.body?.cancel();
        const other = await answer(await post(path, { ...body, model: "qwen3" }));
        strictEqual(other.status, 404);
        strictEqual(other.error.code, "model_not_found");
        strictEqual((await answer(await post(path, { ...body, model: 3 }))).error.param, "model");
        const host = await s.server.fetch(
          new Request(new URL(path, s.url), {
            method: "POST",
            headers: { host: "h/x?", authorization: `Bearer ${KEY}` },
            body: JSON.stringify(body),
          }),
        );
        strictEqual(host.status, 400);
        await host.body?.cancel();
      }
      strictEqual(await requests(), before, "no completion request counted");
      const one = await post("/v1/completions", { model: "fortune", prompt: "Hi", max_tokens: 1 });
      await one.body?.cancel();
      strictEqual(await requests(), before + 1, "a completion is counted");
      await s.server.drain(1000);
      strictEqual(await (await post("/tokenize", { prompt: "Hi" })).status, 503);
    } finally {
      await s.close();
    }
  },
});
