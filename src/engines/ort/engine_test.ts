import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { RequestContext } from "../../contract/engine.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import { bytes, collect, fortuneEngine, request } from "../../../test/support/fortune_engine.ts";
import { onnxFortune } from "../../../test/support/onnx_fortune.ts";
import { OrtEngine, type OrtEngineOptions } from "./engine.ts";

const PROMPTS = [bytes("The quick brown fox"), bytes("Love"), bytes("You will be")];

async function ort(options: Partial<OrtEngineOptions> = {}): Promise<OrtEngine> {
  return new OrtEngine({ files: dirFiles(await onnxFortune()), name: "fortune", ...options });
}

/** Every request through `engine`, one at a time. */
async function run(
  engine: OrtEngine | Awaited<ReturnType<typeof fortuneEngine>>,
  reqs: PreprocessedRequest[],
): Promise<number[][]> {
  const out = [];
  for (const r of reqs) out.push((await collect(engine, r)).ids);
  return out;
}

Deno.test("OrtEngine (f32, WebGPU EP) gives WebGpuEngine's greedy and seeded tokens", async () => {
  const greedy = PROMPTS.map((p) => request(p, { stop_conditions: { max_tokens: 6 } }));
  const seeded = PROMPTS.slice(0, 2).map((p, i) =>
    request(p, {
      stop_conditions: { max_tokens: 6 },
      sampling_options: { temperature: 0.8, top_p: 0.9, seed: 1234 + i },
    })
  );
  const kiln = await fortuneEngine();
  await kiln.start(0n);
  const want = await run(kiln, [...greedy, ...seeded]);
  const wantLp = (await collect(
    kiln,
    request(PROMPTS[1]!, { stop_conditions: { max_tokens: 2 }, output_options: { logprobs: 3 } }),
  )).chunks.filter((c) => c.token_ids.length > 0);
  await kiln.cleanup();
  const e = await ort({ variant: "model", executionProvider: "webgpu" });
  const config = await e.start(0n);
  try {
    equal(config.runtime_data?.engine, "ort");
    equal(config.runtime_data?.execution_provider, "webgpu");
    equal(config.runtime_data?.variant, "model");
    equal(config.runtime_data?.sampler, "wgsl");
    const got = await run(e, [...greedy, ...seeded]);
    deepStrictEqual(got, want);
    ok(got.every((ids) => ids.length === 6));
    // Logprobs from the WGSL sampler on ORT's logits: WebGpuEngine's, within f32 rounding.
    const lpReq = request(PROMPTS[1]!, {
      stop_conditions: { max_tokens: 2 },
      output_options: { logprobs: 3 },
    });
    const mine = (await collect(e, lpReq)).chunks.filter((c) => c.token_ids.length > 0);
    equal(mine.length, 2);
    mine.forEach((c, i) => {
      const theirs = wantLp[i]!;
      deepStrictEqual(c.token_ids, theirs.token_ids);
      deepStrictEqual(
        c.top_logprobs![0]!.map((t) => t.token_id),
        theirs.top_logprobs![0]!.map((t) => t.token_id),
      );
      c.top_logprobs![0]!.forEach((t, r) =>
        ok(Math.abs(t.logprob - theirs.top_logprobs![0]![r]!.logprob) < 1e-3, "top logprob")
      );
      ok(Math.abs(c.log_probs![0]! - theirs.log_probs![0]!) < 1e-3, "chosen logprob");
    });
    // Cancellation within a step: stopped while a step is in flight, the stream ends before
    // that step returns (told by the gauges, reported after every step), not after it.
    let reports = 0;
    e.onGauges(() => reports++);
    const ctx = new RequestContext();
    const chunks = [];
    let atStop: { runs: number; reports: number } | undefined;
    const runs0 = e.steps.runs; // session.run calls so far, this test's other requests'
    for await (
      const c of e.generate(
        request(bytes("Hi"), { stop_conditions: { max_tokens: 20, ignore_eos: true } }),
        ctx,
      )
    ) {
      chunks.push(c);
      if (chunks.length === 2) {
        // The loop started the next step before this chunk reached us.
        atStop = { runs: e.steps.runs - runs0, reports };
        ctx.stop();
      }
    }
    const last = chunks.at(-1)!;
    equal(last.finish_reason, "cancelled");
    equal(chunks.length, 3, "two tokens, then the cancelled chunk");
    ok(atStop !== undefined);
    equal(atStop.runs, 3, "the third step was in flight at the stop");
    equal(reports, atStop.reports, "the stream ended before that step returned");
    equal(e.steps.runs - runs0, 3, "and no step was started after it");
  } finally {
    await e.cleanup();
  }
});
