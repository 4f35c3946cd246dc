/**
 * OrtEngine on onnxruntime-web's wasm EP (CPU; sampled with the float64 reference semantics):
 * WebGpuEngine's greedy and seeded tokens, the conformance kit, stop conditions, logprobs,
 * usage, round-robin interleaving, cancellation, drain and cleanup.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { RequestContext } from "../../contract/engine.ts";
import { EngineError } from "../../contract/errors.ts";
import { formatReport, runConformanceReport } from "../../conformance/kit.ts";
import { bytes, collect, fortuneEngine, request } from "../../../test/support/fortune_engine.ts";
import { checkStopsUsageAndBadInput } from "../../../test/support/engine_checks.ts";
import { checkCancellation, gaugeReports } from "../../../test/support/cancel_checks.ts";
import { onnxFortune } from "../../../test/support/onnx_fortune.ts";
import { OrtEngine } from "./engine.ts";

async function wasmEngine(variant = "model", maxNumSeqs?: number): Promise<OrtEngine> {
  const files = dirFiles(await onnxFortune());
  return new OrtEngine({
    files,
    name: "fortune",
    variant,
    executionProvider: "wasm",
    ...(maxNumSeqs ? { maxNumSeqs } : {}),
  });
}

Deno.test("wasm EP: WebGpuEngine's greedy and seeded tokens; runtime_data names the CPU sampler", async () => {
  const prompts = [bytes("The quick brown fox"), bytes("Love"), bytes("You will be")];
  const reqs = [
    ...prompts.map((p) => request(p, { stop_conditions: { max_tokens: 16 } })),
    ...prompts.map((p, i) =>
      request(p, {
        stop_conditions: { max_tokens: 16 },
        sampling_options: { temperature: 0.8, top_p: 0.9, top_k: 40, seed: 77 + i },
      })
    ),
  ];
  const kiln = await fortuneEngine();
  await kiln.start(0n);
  const want = [];
  for (const r of reqs) want.push((await collect(kiln, r)).ids);
  await kiln.cleanup();
  const e = await wasmEngine();
  const config = await e.start(0n);
  try {
    deepStrictEqual(
      [config.runtime_data?.engine, config.runtime_data?.execution_provider],
      ["ort", "wasm"],
    );
    equal(config.runtime_data?.sampler, "cpu-reference");
    equal(config.runtime_data?.variant, "model");
    equal(config.context_length, 1024);
    const got = [];
    for (const r of reqs) got.push((await collect(e, r)).ids);
    deepStrictEqual(got, want);
  } finally {
    await e.cleanup();
  }
});

Deno.test("wasm EP: OrtEngine passes the conformance kit", async () => {
  const files = dirFiles(await onnxFortune());
  const report = await runConformanceReport(() =>
    new OrtEngine({ files, name: "fortune", variant: "model", executionProvider: "wasm" })
  );
  ok(report.passed, formatReport(report));
});

Deno.test("wasm EP: stop conditions, logprobs, usage, bad requests", async () => {
  const e = await wasmEngine();
  await checkStopsUsageAndBadInput(e);
  // The request whose masks leave no token is admitted, then fails.
  deepStrictEqual(e.stats, { started: 9, finished: 8, cancelled: 0, failed: 1 });
});

Deno.test("wasm EP: two concurrent requests step in turn; cancellation; drain", async () => {
  const e = await wasmEngine();
  await e.start(0n);
  try {
    const order: string[] = [];
    const track = async (name: string, prompt: number[]) => {
      const ctx = new RequestContext();
      const ids = [];
      for await (
        const c of e.generate(request(prompt, { stop_conditions: { max_tokens: 10 } }), ctx)
      ) {
        if (c.token_ids.length > 0) order.push(name);
        ids.push(...c.token_ids);
      }
      return ids;
    };
    const alone =
      (await collect(e, request(bytes("Love"), { stop_conditions: { max_tokens: 10 } }))).ids;
    const [a, b] = await Promise.all([track("a", bytes("Love")), track("b", bytes("Fortune"))]);
    deepStrictEqual(a, alone, "interleaving changes no tokens");
    equal(b.length, 10);
    // Round-robin: neither request runs ahead of the other by more than a step.
    let diff = 0, lead = 0;
    for (const n of order) lead = Math.max(lead, Math.abs(diff += n === "a" ? 1 : -1));
    ok(lead <= 1, `order ${order.join("")}`);

    // Cancellation: the stream ends with a terminal cancelled chunk; the engine goes on.
    const ctx = new RequestContext();
    const chunks = [];
    for await (
      const c of e.generate(request(bytes("You"), { stop_conditions: { max_tokens: 50 } }), ctx)
    ) {
      chunks.push(c);
      if (chunks.length === 2) ctx.stop();
    }
    equal(chunks.at(-1)!.finish_reason, "cancelled");
    ok(chunks.length <= 3);

    // Drain waits for the requests in flight, then refuses new ones.
    const running = collect(e, request(bytes("A"), { stop_conditions: { max_tokens: 6 } }));
    await e.drain();
    equal((await running).last.finish_reason, "length");
    await rejects(
      collect(e, request([256])),
      (err: unknown) => err instanceof EngineError && err.type === "EngineShutdown",
    );
  } finally {
    await e.cleanup();
    await e.cleanup(); // idempotent
  }
});

Deno.test("wasm EP: a pre-aborted signal, consumers that break, slots free within one run", async () => {
  const e = await wasmEngine("model", 4);
  await e.start(0n);
  try {
    const gauges = gaugeReports(e);
    await checkCancellation(e, {
      used: () => e.usedSlots,
      steps: () => e.steps.runs,
      stats: () => ({ ...e.stats }),
      nextReport: gauges.nextReport,
    });
    equal(gauges.usage(), 0, "the slot gauge reports them free");
  } finally {
    await e.cleanup();
  }
});
