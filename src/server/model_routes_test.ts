/**
 * `GET /v1/models/{id}` over real sockets: the `openai` client's `models.retrieve` for a name
 * with a `/` (which it sends as `%2F`), the same name sent raw, the list's entry and the lookup
 * alike, and a 404 in OpenAI's shape (the client's `NotFoundError`) for any other name, the same
 * 404 a completion naming it gets. Behind the API key; GET and HEAD only.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import OpenAI from "openai";
import { mockServer } from "../../test/support/server.ts";
import { modelId } from "./model_routes.ts";

const NAME = "Qwen/Qwen3-0.6B";
const KEY = "k";

Deno.test("models.retrieve: the served model by name, 404 model_not_found for any other", async () => {
  const s = await mockServer({ apiKey: KEY }, { model: NAME });
  const client = new OpenAI({ baseURL: new URL("v1", s.url).href, apiKey: KEY, maxRetries: 0 });
  const get = (path: string, init: RequestInit = {}) =>
    fetch(new URL(path, s.url), { ...init, headers: { authorization: `Bearer ${KEY}` } });
  try {
    const model = await client.models.retrieve(NAME);
    const list = await client.models.list();
    deepStrictEqual({ ...model }, { ...list.data[0] });
    deepStrictEqual({ ...model }, { id: NAME, object: "model", created: 0, owned_by: "kiln" });
    // The name sent raw, its `/` a path separator, is the same model.
    const raw = await get(`/v1/models/${NAME}`);
    strictEqual(raw.status, 200);
    deepStrictEqual(await raw.json(), { ...model });
    const head = await get(`/v1/models/${encodeURIComponent(NAME)}`, { method: "HEAD" });
    strictEqual(head.status, 200);
    await head.body?.cancel();

    for (const other of ["fortune", "Qwen/Qwen3-8B", "Qwen", "qwen/qwen3-0.6b", "a b%"]) {
      await rejects(client.models.retrieve(other), (e: unknown) => {
        ok(e instanceof OpenAI.NotFoundError, String(e));
        strictEqual(e.code, "model_not_found");
        strictEqual(e.type, "invalid_request_error");
        strictEqual(e.param, "model");
        ok(e.message.includes(JSON.stringify(other)) && e.message.includes(NAME), e.message);
        return true;
      });
    }
    // A completion naming another model gets the same 404.
    await rejects(
      client.completions.create({ model: "Qwen/Qwen3-8B", prompt: "Hi", max_tokens: 1 }),
      (e: unknown) => e instanceof OpenAI.NotFoundError && e.code === "model_not_found",
    );
    for (const path of ["/v1/models/", "/v1/models/%E0%A4%A"]) {
      const res = await get(path);
      strictEqual(res.status, 404, path);
      strictEqual((await res.json()).error.code, "model_not_found");
    }
    const post = await get(`/v1/models/${NAME}`, { method: "POST" });
    strictEqual(post.status, 405);
    strictEqual(post.headers.get("allow"), "GET, HEAD");
    await post.body?.cancel();
    const anonymous = await fetch(new URL(`/v1/models/${NAME}`, s.url));
    strictEqual(anonymous.status, 401);
    await anonymous.body?.cancel();
  } finally {
    await s.close();
  }
});

Deno.test("modelId: the id after /v1/models/, percent-decoded; other paths none", () => {
  strictEqual(modelId("/v1/models/Qwen%2FQwen3-0.6B"), NAME);
  strictEqual(modelId("/v1/models/Qwen/Qwen3-0.6B"), NAME);
  strictEqual(modelId("/v1/models/%zz"), "%zz");
  strictEqual(modelId("/v1/models"), undefined);
  strictEqual(modelId("/v1/modelsX"), undefined);
});
