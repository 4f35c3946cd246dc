/**
 * The drain-time gauge measures the drain: a stream a scripted engine holds open for a known time
 * (a token every 30 ms) after the drain starts is let finish, and
 * `dynamo_component_drain_time_seconds` is at least that time, as `serve` records it on a signal
 * (`shutDown` over the server's own drain).
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import type { GenerateContext } from "../../src/contract/engine.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "../../src/contract/types.ts";
import { specFiles } from "../../src/adapters/deno/file_source.ts";
import { EngineMetrics, testHierarchy } from "../../src/contract/metrics/engine_metrics.ts";
import { shutDown } from "../../src/metrics/engine_lifecycle.ts";
import { loadText } from "../../src/text/load.ts";
import { ScriptedEngine } from "../support/scripted_engine.ts";
import { testServer } from "../support/server.ts";

const DELAY_MS = 30;
/** The reply: one token per letter (the fortune model's tokens are bytes). */
const REPLY = "abcdefghijkl";

/** The scripted reply, each chunk `DELAY_MS` after the one before. */
class SlowEngine extends ScriptedEngine {
  override async *generate(
    request: PreprocessedRequest,
    ctx: GenerateContext,
  ): AsyncGenerator<LLMEngineOutput> {
    for await (const chunk of super.generate(request, ctx)) {
      await new Promise((r) => setTimeout(r, DELAY_MS));
      yield chunk;
    }
  }
}

Deno.test("a drain that lets a stream finish records at least the time the stream was held", async () => {
  const text = await loadText(
    specFiles({
      kind: "dir",
      path: new URL("../../models/fortune/", import.meta.url).pathname,
      name: "fortune",
    }),
  );
  const engine = new SlowEngine("fortune", text.tokenizer);
  engine.reply = REPLY;
  const server = testServer(engine);
  server.ready(await engine.start(1n), text);
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, server.fetch);
  try {
    const res = await fetch(`http://127.0.0.1:${http.addr.port}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "fortune", prompt: "x", max_tokens: 64, stream: true }),
    });
    equal(res.status, 200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let sse = (await reader.read()).value ?? "";
    ok(sse.includes('"text":"a"'), sse);
    // The first token is out: the other letters and the end, DELAY_MS apart, are still to come
    // (the next wait may have begun while "a" was on its way: one wait less is certain).
    const held = ((REPLY.length - 1) * DELAY_MS) / 1000;
    const metrics = EngineMetrics.fromHierarchy(testHierarchy());
    const shut = shutDown(engine, metrics, () => server.drain(5000));
    for (let r = await reader.read(); !r.done; r = await reader.read()) sse += r.value;
    await shut;
    ok(sse.includes('"finish_reason":"stop"'), `the stream ran to its end: ${sse}`);
    ok(sse.trimEnd().endsWith("data: [DONE]"), sse);
    const line = metrics.render().body.split("\n").find((l) =>
      l.startsWith("dynamo_component_drain_time_seconds{")
    );
    const drain = Number(line?.split(" ").pop());
    ok(drain >= held && drain < 5, `drain ${drain} s, the stream held ${held} s: ${line}`);
  } finally {
    server.abortAll();
    await http.shutdown();
  }
});
