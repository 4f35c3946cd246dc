/**
 * Many concurrent requests with random prompt and output lengths, some cancelled at a random
 * moment, against a fortune engine: every stream must end validly (`length`, or `cancelled`
 * when cancelled), and afterwards no KV block is held and the request counters balance.
 */
import { strictEqual as equal } from "node:assert/strict";
import { RequestContext } from "../../src/contract/engine.ts";
import type { LLMEngineOutput } from "../../src/contract/types.ts";
import { validateStream } from "../../src/contract/validate.ts";
import type { WebGpuEngine } from "../../src/engines/webgpu/engine.ts";
import { seeded } from "./kernel_harness.ts";

export interface SoakResult {
  requests: number;
  cancelled: number;
  tokens: number;
}

/**
 * `total` requests, at most `concurrency` at once (seeded by `seed`); then the engine must hold
 * no KV block and its counters balance (with `drain`, after draining it).
 */
export async function soak(
  engine: WebGpuEngine,
  total: number,
  concurrency: number,
  seed = 7,
  drain = true,
): Promise<SoakResult> {
  const r = seeded(seed, total * 4);
  let cancelled = 0, tokens = 0, next = 0;
  const one = async (i: number) => {
    const promptLen = 1 + Math.floor(Math.abs(r[4 * i]!) * 40);
    const maxTokens = 1 + Math.floor(Math.abs(r[4 * i + 1]!) * 12);
    const cancelAfterMs = r[4 * i + 2]! > 0.4 ? Math.abs(r[4 * i + 3]!) * 300 : undefined;
    const prompt = [
      256,
      ...Array.from({ length: promptLen - 1 }, (_, j) => 97 + ((seed + i + j) % 26)),
    ];
    const ctx = new RequestContext();
    const timer = cancelAfterMs === undefined
      ? undefined
      : setTimeout(() => ctx.stop(), cancelAfterMs);
    const chunks: LLMEngineOutput[] = [];
    const req = {
      model: "fortune",
      token_ids: prompt,
      stop_conditions: { max_tokens: maxTokens, ignore_eos: true },
      sampling_options: { temperature: 0.9, seed: i },
      output_options: {},
      eos_token_ids: [257],
      annotations: [],
    };
    try {
      for await (
        const c of validateStream(engine.generate(req, ctx), { promptTokens: prompt.length })
      ) chunks.push(c);
    } finally {
      clearTimeout(timer);
    }
    const n = chunks.reduce((s, c) => s + c.token_ids.length, 0);
    tokens += n;
    if (chunks.at(-1)!.finish_reason === "cancelled") cancelled++;
    else {
      equal(chunks.at(-1)!.finish_reason, "length");
      equal(n, maxTokens);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, async () => {
    while (next < total) await one(next++);
  }));
  if (drain) await engine.drain();
  equal(engine.usedBlocks, 0, "no KV block held after every request ended");
  const s = engine.stats;
  equal(s.finished + s.cancelled + s.failed, s.started, "every started request ended once");
  equal(s.failed, 0);
  return { requests: total, cancelled, tokens };
}
