/**
 * `deno task serve --model URL`: a checkpoint read over HTTP with Range requests, a progress bar
 * that reaches 100%, and a URL that 404s stopping the server with a message naming it; a single
 * `.gguf` file's URL (as the demo's catalog names its chat models) is read the same way into the
 * cache, its chat template from the file.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import OpenAI from "openai";
import { fortuneGguf } from "../support/fortune_gguf.ts";
import { rangeServer } from "../support/range_server.ts";
import { startServer } from "./server.ts";

// serve keeps URL models in $XDG_CACHE_HOME/kiln/models: a fresh one for these tests (and no
// KILN_CACHE_DIR, which npm test sets and which would take precedence).
const CACHE = await Deno.makeTempDir();
Deno.env.set("XDG_CACHE_HOME", CACHE);
Deno.env.delete("KILN_CACHE_DIR");
const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const SERVE = new URL("../../src/adapters/deno/serve.ts", import.meta.url).pathname;

Deno.test("serve loads a model from a URL with Range requests and shows its load progress", async () => {
  const files = rangeServer(FORTUNE);
  const server = await startServer(["--model", files.base]);
  try {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "none", maxRetries: 0 });
    const r = await client.completions.create({
      model: "fortune",
      prompt: "Luck",
      max_tokens: 8,
      seed: 1,
    });
    equal(r.usage?.completion_tokens, r.choices[0]!.finish_reason === "length" ? 8 : undefined);
    ok(files.ranges.length > 0, "weights read by Range requests");
  } finally {
    const { code, stderr } = await server.stop();
    await files.shutdown();
    equal(code, 0, stderr);
    ok(/loading fortune \[#{30}\] 100% 9\.\d\/9\.\d MB/.test(stderr), stderr);
  }
});

Deno.test("serve keeps a URL model in the XDG cache: a second start asks the server nothing", async () => {
  const files = rangeServer(FORTUNE, { etag: "sha256" });
  try {
    for (const round of [1, 2]) {
      const before = files.served.length;
      const server = await startServer(["--model", files.base]);
      const { code, stderr } = await server.stop();
      equal(code, 0, stderr);
      if (round === 2) equal(files.served.length, before, "no request on the second start");
    }
    const stored = [...Deno.readDirSync(`${CACHE}/kiln/models`)].map((e) => e.name);
    ok(stored.some((n) => n.endsWith(".bin")), stored.join(" "));
    const first = files.served.filter((s) => s.method === "GET" && s.path === "model.safetensors");
    ok(first.length > 0 && first.every((s) => s.range !== null), "downloaded by Range requests");
  } finally {
    await files.shutdown();
  }
});

Deno.test("serve --no-cache reads a URL model over the network, storing nothing", async () => {
  const files = rangeServer(FORTUNE);
  const cache = await Deno.makeTempDir();
  Deno.env.set("XDG_CACHE_HOME", cache);
  const server = await startServer(["--model", files.base, "--no-cache"]).finally(() => {
    Deno.env.set("XDG_CACHE_HOME", CACHE);
  });
  try {
    ok(files.ranges.length > 0);
  } finally {
    const { code, stderr } = await server.stop();
    await files.shutdown();
    equal(code, 0, stderr);
    // (Mesa keeps its shader cache there too.)
    ok(![...Deno.readDirSync(cache)].some((e) => e.name === "kiln"), "no kiln/ in the cache");
  }
});

Deno.test("a model URL that 404s ends serve with exit 2 and a message naming the URL", async () => {
  const files = rangeServer(FORTUNE);
  try {
    const bad = `${files.base}no-such-model/`;
    const { code, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", SERVE, "--model", bad, "--port", "0"],
      stdout: "null",
      stderr: "piped",
    }).output();
    const message = new TextDecoder().decode(stderr);
    equal(code, 2, message);
    // Weights and tokenizer load side by side: whichever asks first names its file.
    ok(
      message.includes(`${bad}config.json: HTTP 404`) ||
        message.includes(`${bad}tokenizer.json: HTTP 404`),
      message,
    );
  } finally {
    await files.shutdown();
  }
});

Deno.test("serve --model a .gguf URL: read by Range requests into the cache, chat with tools", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeFile(`${dir}/fortune-Q8_0.gguf`, await fortuneGguf());
  const files = rangeServer(`${dir}/`, { etag: "sha256" });
  const server = await startServer(["--model", `${files.base}fortune-Q8_0.gguf`]);
  try {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "none", maxRetries: 0 });
    // The file's own template teaches <tool_call>: tools with auto are answered, not refused.
    const r = await client.chat.completions.create({
      model: "fortune",
      messages: [{ role: "user", content: "What is the weather in Paris?" }],
      tools: [{ type: "function", function: { name: "get_weather", parameters: {} } }],
      max_tokens: 8,
      seed: 1,
    });
    const choice = r.choices[0]!;
    equal(choice.message.role, "assistant");
    ok(typeof choice.message.content === "string" || choice.message.tool_calls, JSON.stringify(r));
    ok(r.usage!.prompt_tokens > 100, "the tools are in the prompt");
    ok(files.ranges.length > 0, "read by Range requests");
    const stored = [...Deno.readDirSync(`${CACHE}/kiln/models`)].map((e) => e.name);
    ok(stored.some((n) => n.endsWith(".bin")), stored.join(" "));
  } finally {
    const { code, stderr } = await server.stop();
    await files.shutdown();
    await Deno.remove(dir, { recursive: true });
    equal(code, 0, stderr);
  }
});
