import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import { bytes, collect, fortuneEngine, request } from "../../../test/support/fortune_engine.ts";
import { onnxFortune } from "../../../test/support/onnx_fortune.ts";
import { OrtEngine, type OrtEngineOptions } from "./engine.ts";

const PROMPTS = [bytes("The quick brown fox"), bytes("Love"), bytes("You will be"), bytes("A")];

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
  const greedy = PROMPTS.map((p) => request(p, { stop_conditions: { max_tokens: 12 } }));
  const seeded = PROMPTS.map((p, i) =>
    request(p, {
      stop_conditions: { max_tokens: 12 },
      sampling_options: { temperature: 0.8, top_p: 0.9, seed: 1234 + i },
    })
  );
  const kiln = await fortuneEngine();
  await kiln.start(0n);
  const want = await run(kiln, [...greedy, ...seeded]);
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
    ok(got.every((ids) => ids.length === 12));
  } finally {
    await e.cleanup();
  }
});
