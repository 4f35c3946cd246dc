/** Helpers for WebGpuEngine tests on the fortune model: an engine, requests and collected streams. */
import { type LLMEngine, RequestContext } from "../../src/contract/engine.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "../../src/contract/types.ts";
import { validateStream } from "../../src/contract/validate.ts";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { WebGpuEngine, type WebGpuEngineOptions } from "../../src/engines/webgpu/engine.ts";
import { testGpu } from "./gpu.ts";
import { MODELS } from "./models.ts";

export const FORTUNE = MODELS.find((m) => m.name === "fortune")!.dir.pathname;

/** A fortune engine on the shared test device (64 KV blocks unless told otherwise). */
export async function fortuneEngine(
  options: Partial<WebGpuEngineOptions> = {},
): Promise<WebGpuEngine> {
  const gpu = await testGpu();
  return new WebGpuEngine({
    files: dirFiles(FORTUNE),
    name: "fortune",
    gpu,
    kvBlocks: 64,
    ...options,
  });
}

/** Run `body` on a started fortune engine (see {@linkcode fortuneEngine}), cleaned up after. */
export async function withFortune(
  options: Partial<WebGpuEngineOptions>,
  body: (e: WebGpuEngine) => Promise<void>,
): Promise<void> {
  const e = await fortuneEngine(options);
  await e.start(0n);
  try {
    await body(e);
  } finally {
    await e.cleanup();
  }
}

/** A greedy request for 8 tokens unless overridden. */
export function request(
  prompt: number[],
  overrides: Partial<PreprocessedRequest> = {},
): PreprocessedRequest {
  return {
    model: "fortune",
    token_ids: prompt,
    stop_conditions: { max_tokens: 8 },
    sampling_options: { temperature: 0 },
    output_options: {},
    eos_token_ids: [],
    annotations: [],
    ...overrides,
  };
}

export interface Collected {
  chunks: LLMEngineOutput[];
  ids: number[];
  last: LLMEngineOutput;
}

/** Run a request to its end through `validateStream`. */
export async function collect(
  e: LLMEngine,
  req: PreprocessedRequest,
  ctx: RequestContext = new RequestContext(),
): Promise<Collected> {
  const chunks: LLMEngineOutput[] = [];
  for await (
    const c of validateStream(e.generate(req, ctx), { promptTokens: req.token_ids.length })
  ) chunks.push(c);
  return { chunks, ids: chunks.flatMap((c) => c.token_ids), last: chunks[chunks.length - 1]! };
}

/** The fortune model's byte-level prompt: BOS (256), then UTF-8 bytes. */
export const bytes = (s: string): number[] => [256, ...new TextEncoder().encode(s)];
