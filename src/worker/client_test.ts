import { ok, rejects, strictEqual as equal } from "node:assert/strict";
import { RequestContext } from "../contract/engine.ts";
import { EngineError } from "../contract/errors.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "../contract/types.ts";
import { formatReport, runConformanceReport } from "../conformance/kit.ts";
import { WorkerEngine } from "./client.ts";
import { MODELS } from "../../test/support/models.ts";
import { checkCancellation } from "../../test/support/cancel_checks.ts";
import { watch } from "../../test/support/streams.ts";

const fortune = MODELS.find((m) => m.name === "fortune")!.dir.pathname;
const options = { model: { kind: "dir" as const, path: fortune, name: "fortune" }, kvBlocks: 64 };
const hostWorker = () =>
  new Worker(new URL("../adapters/deno/worker.ts", import.meta.url), { type: "module" });

function request(prompt: number[], maxTokens = 6): PreprocessedRequest {
  return {
    model: "fortune",
    token_ids: prompt,
    stop_conditions: { max_tokens: maxTokens, ignore_eos: true },
    sampling_options: { temperature: 0 },
    output_options: {},
    eos_token_ids: [],
    annotations: [],
  };
}

async function collect(stream: AsyncIterable<LLMEngineOutput>): Promise<LLMEngineOutput[]> {
  const out: LLMEngineOutput[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

Deno.test("WorkerEngine (Deno Worker + comlink) passes the conformance kit on fortune", async () => {
  // 16 blocks (256 tokens): kv_cache_overload processes more tokens than the cache holds.
  const small = { ...options, kvBlocks: 16 };
  const report = await runConformanceReport(() => new WorkerEngine(hostWorker, small));
  ok(report.passed, formatReport(report));
});

Deno.test("WorkerEngine: a pre-aborted signal never starts in the worker; a consumer's break cancels there", async () => {
  const e = new WorkerEngine(hostWorker, { ...options, maxNumSeqs: 4 });
  await e.start(0n);
  try {
    const stats = async () => (await e.stats())!;
    await checkCancellation(e, {
      used: async () => (await stats()).usedBlocks,
      steps: async () => (await stats()).steps,
      stats: async () => (await stats()).requests,
      freedByNextStep: true,
    });
    const s = await stats();
    equal(s.streams, 0, "the host has no stream open");
    equal(s.totalBlocks, 64);
  } finally {
    await e.cleanup();
  }
  equal(await e.stats(), undefined, "no stats once cleaned up");
});

Deno.test("WorkerEngine: Dynamo 1.5's members cross the worker boundary", async () => {
  const e = new WorkerEngine(hostWorker, options);
  const typed = (type: string, text: string) => (err: unknown) =>
    err instanceof EngineError && err.type === type && err.message.includes(text);
  equal(await e.isQuiescent(), true, "no worker, nothing live");
  await rejects(e.engineControl("clear_kv_blocks", {}), typed("EngineShutdown", "new engine"));
  const config = await e.start(0n);
  try {
    equal(config.llm?.total_kv_blocks, 64);
    await e.onEndpointReady({ namespace: "dynamo", component: "kiln", endpoint: "generate" });
    const probe = (await e.healthCheckPayload())!;
    equal(probe.is_probe, true);
    equal(probe.token_ids[0], 256, "fortune's BOS");
    equal((await collect(e.generate(probe, new RequestContext()))).at(-1)?.finish_reason, "length");
    equal(JSON.stringify(await e.supportedControls()), '["clear_kv_blocks"]');
    const answer = await e.engineControl("clear_kv_blocks", {});
    equal(answer.status, "success");
    ok((answer.cleared_blocks as number) >= 0);
    await rejects(e.engineControl("wake_up", {}), typed("InvalidArgument", '"wake_up"'));
    await rejects(
      e.engineControl("clear_kv_blocks", { n: 1n } as unknown as Record<string, unknown>),
      typed("InvalidArgument", "the body is not JSON"),
    );
    const ctx = new RequestContext();
    const it = e.generate(request([256, 1, 2], 500), ctx)[Symbol.asyncIterator]();
    await it.next();
    equal(await e.isQuiescent(), false, "a request is streaming");
    ctx.stop();
    while (!(await it.next()).done);
    let quiet = await e.isQuiescent();
    for (let i = 0; i < 100 && !quiet; i++) {
      await new Promise((r) => setTimeout(r, 20));
      quiet = await e.isQuiescent();
    }
    equal(quiet, true, "quiescent once the worker ended it");
  } finally {
    await e.cleanup();
  }
  equal(await e.healthCheckPayload(), null);
  equal((await e.supportedControls()).length, 0);
  await rejects(
    e.onEndpointReady({ namespace: "a", component: "b", endpoint: "c" }),
    typed(
      "EngineShutdown",
      "stopped engine",
    ),
  );
});

Deno.test("errors cross the worker boundary with their EngineError type and message", async () => {
  const e = new WorkerEngine(hostWorker, options);
  await e.start(0n);
  try {
    await rejects(
      collect(e.generate(request([256, 999]), new RequestContext())),
      (err: unknown) => {
        ok(err instanceof EngineError, String(err));
        equal(err.type, "InvalidArgument");
        ok(err.message.includes("vocab"));
        return true;
      },
    );
    const chunks = await collect(e.generate(request([256, 72]), new RequestContext()));
    equal(chunks.at(-1)?.finish_reason, "length", "the worker keeps serving");
    await rejects(
      e.start(0n),
      (err: unknown) => err instanceof EngineError && err.type === "EngineShutdown",
    );
  } finally {
    await e.cleanup();
  }
});

Deno.test("a dying worker ends open streams with Disconnected; a new WorkerEngine starts", async () => {
  let worker: Worker | undefined;
  const crashing = () =>
    worker = new Worker(new URL("../../test/support/crash_worker.ts", import.meta.url), {
      type: "module",
    });
  const e = new WorkerEngine(crashing, options);
  await e.start(0n);
  // Mid-stream: crash at the first chunk, with far more tokens still to come.
  const stream = watch(e.generate(request([256, 72], 900), new RequestContext()));
  await stream.first;
  worker!.postMessage("crash");
  await rejects(
    stream.done,
    (err: unknown) => err instanceof EngineError && err.type === "Disconnected",
  );
  await rejects(
    collect(e.generate(request([256]), new RequestContext())),
    (err: unknown) => err instanceof EngineError && err.type === "Disconnected",
  );
  await e.cleanup();
  const fresh = new WorkerEngine(hostWorker, options);
  await fresh.start(0n);
  equal(
    (await collect(fresh.generate(request([256, 72]), new RequestContext()))).at(-1)?.finish_reason,
    "length",
  );
  await fresh.cleanup();
});

Deno.test("a worker terminated without an event is caught by the heartbeat: streams end Disconnected", async () => {
  let worker: Worker | undefined;
  const make = () => (worker = hostWorker());
  const e = new WorkerEngine(make, options, undefined, { intervalMs: 100, timeoutMs: 3000 });
  const deaths: EngineError[] = [];
  e.onDeath((err) => deaths.push(err));
  await e.start(0n);
  const streams = Array.from(
    { length: 8 },
    (_, i) => watch(e.generate(request([256, 65 + i], 900), new RequestContext())),
  );
  // Mid-stream: every stream has yielded a chunk (or one failed, which fails the test).
  await Promise.race([
    Promise.all(streams.map((s) => s.first)),
    Promise.all(streams.map((s) => s.done)),
  ]);
  worker!.terminate(); // no error event reaches the engine: only the heartbeat can tell
  for (const s of streams) {
    await rejects(s.done, (err: unknown) => {
      ok(err instanceof EngineError && err.type === "Disconnected", String(err));
      ok(/stopped answering/.test(err.message), err.message);
      return true;
    });
  }
  equal(deaths.length, 1);
  await rejects(
    collect(e.generate(request([256]), new RequestContext())),
    (err: unknown) => err instanceof EngineError && err.type === "Disconnected",
  );
  await e.cleanup();
});
