import { match, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { EngineError } from "../contract/errors.ts";
import { MockEngine } from "../engines/mock/mod.ts";
import { FORTUNE } from "../../test/support/fortune_engine.ts";
import { startModel } from "./start.ts";

const hierarchy = { namespace: "kiln", component: "test", endpoint: "generate", workerId: 7n };

/** A mock engine that records whether it was started and cleaned up. */
class Watched extends MockEngine {
  started = false;
  cleaned = false;
  override start(workerId: bigint) {
    this.started = true;
    return super.start(workerId);
  }
  override cleanup() {
    this.cleaned = true;
    return super.cleanup();
  }
}

Deno.test("startModel: text side, started engine and metrics with the model's labels", async () => {
  const engine = new Watched({ model: "fortune", vocabSize: 260 });
  const m = await startModel(engine, dirFiles(FORTUNE), hierarchy);
  try {
    equal(m.engine, engine);
    equal(m.config.model, "fortune");
    ok(m.text.tokenizer.encode("Hello").length > 0);
    ok(m.loadSeconds >= 0);
    const scrape = m.metrics.render().body;
    match(scrape, /dynamo_component_model_load_time_seconds\{[^}]*model="fortune"[^}]*\}/);
    match(scrape, /worker_id="7"/);
  } finally {
    await engine.cleanup();
  }
});

Deno.test("startModel: files that are not a model reject naming them, the engine cleaned up", async () => {
  const engine = new Watched({ model: "none" });
  const missing = new URL("../../test/fixtures/", import.meta.url).pathname + "no-such-model/";
  await rejects(startModel(engine, dirFiles(missing), hierarchy), (e: unknown) => {
    ok(e instanceof EngineError, String(e));
    ok(e.message.includes("no-such-model"), e.message);
    return true;
  });
  equal(engine.started, false, "the text side fails first; the engine never starts");
  ok(engine.cleaned, "the engine is cleaned up");
});

Deno.test("startModel: an engine that fails to start is cleaned up and its error rethrown", async () => {
  const engine = new Watched({ model: "fortune" });
  await engine.start(0n); // a second start is refused
  engine.cleaned = false;
  await rejects(startModel(engine, dirFiles(FORTUNE), hierarchy), (e: unknown) => {
    ok(e instanceof EngineError, String(e));
    return true;
  });
  ok(engine.cleaned);
});
