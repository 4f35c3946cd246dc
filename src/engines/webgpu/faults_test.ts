/**
 * Faults while requests run. GPU device loss in the middle of eight streams (each has yielded a
 * chunk, none can have ended): every stream ends with a typed error (none hangs, none is lost),
 * and the engine refuses what comes after instead of hanging. A step that cannot be encoded (its
 * plan refused, as every prompt past one chunk was on quantized weights once): the request it
 * carries fails, typed, and the engine goes on with the next.
 */
import { ok, rejects, strictEqual as equal } from "node:assert/strict";
import { RequestContext } from "../../contract/engine.ts";
import { EngineError } from "../../contract/errors.ts";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { acquireGpu } from "../../gpu/device.ts";
import { Forward } from "../../runtime/forward.ts";
import { WebGpuEngine } from "./engine.ts";
import { validateStream } from "../../contract/validate.ts";
import { collect, FORTUNE, fortuneEngine, request } from "../../../test/support/fortune_engine.ts";
import { watch } from "../../../test/support/streams.ts";

Deno.test("device.destroy() mid-stream: all eight streams end with EngineShutdown; later requests too", async () => {
  // A device of its own: destroying the shared test device would break the other tests.
  const gpu = await acquireGpu({ label: "kiln-faults-test" });
  const engine = new WebGpuEngine({ files: dirFiles(FORTUNE), name: "fortune", gpu, kvBlocks: 64 });
  await engine.start(0n);
  try {
    // Far more tokens than can be made between a stream's first chunk and the destroy below.
    const streams = Array.from(
      { length: 8 },
      (_, i) =>
        watch(validateStream(
          engine.generate(
            request([256, 65 + i], { stop_conditions: { max_tokens: 900, ignore_eos: true } }),
            new RequestContext(),
          ),
          { promptTokens: 2 },
        )),
    );
    // Mid-stream: every stream has yielded a chunk (or one failed, which fails the test).
    await Promise.race([
      Promise.all(streams.map((s) => s.first)),
      Promise.all(streams.map((s) => s.done)),
    ]);
    gpu.device.destroy();
    const shutdown = (e: unknown) => {
      ok(e instanceof EngineError && e.type === "EngineShutdown", String(e));
      ok(/device lost/i.test(e.message), e.message);
      return true;
    };
    for (const s of streams) await rejects(s.done, shutdown);
    await rejects(
      collect(engine, request([256, 66]), new RequestContext()),
      (e: unknown) => e instanceof EngineError,
    );
  } finally {
    await engine.cleanup();
  }
});

Deno.test("a step that cannot be encoded fails the request it carries, typed; the queued ones run", async () => {
  // One sequence at a time, so the failing step carries one request and the others wait.
  const engine = await fortuneEngine({ maxNumSeqs: 1 });
  await engine.start(0n);
  // The fault: a step of exactly the failing prompt's length is refused while it is encoded.
  const failing = Array.from({ length: 37 }, (_, i) => 65 + (i % 26));
  const encode = Forward.prototype.encode;
  Forward.prototype.encode = function (encoder, batch) {
    if (batch.tokens.length === failing.length) {
      return Promise.reject(EngineError.invalidArgument("test: this step is refused"));
    }
    return encode.call(this, encoder, batch);
  };
  try {
    const first = collect(engine, request([256, 65]));
    const refused = collect(engine, request(failing));
    const next = collect(engine, request([256, 66]));
    await rejects(refused, (e: unknown) => {
      ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
      ok(e.message.includes("test: this step is refused"), e.message);
      return true;
    });
    for (const done of [await first, await next]) {
      equal(done.ids.length, 8);
      equal(done.last.finish_reason, "length");
    }
  } finally {
    Forward.prototype.encode = encode;
    await engine.cleanup();
  }
});
