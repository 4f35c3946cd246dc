/** The fixture models speculative decoding is checked on, with prompts that recur and drafts. */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { RequestContext } from "../../src/contract/engine.ts";
import type { SpeculativeOptions } from "../../src/engines/speculation.ts";
import { WebGpuEngine, type WebGpuEngineOptions } from "../../src/engines/webgpu/engine.ts";
import { bytes, collect, fortuneEngine, request } from "./fortune_engine.ts";
import { testGpu } from "./gpu.ts";
import { MODELS } from "./models.ts";
import { archByGguf } from "../../src/model/arch/mod.ts";

const FIXTURES = new URL("../fixtures/", import.meta.url).pathname;

/** A fixture model, a prompt for it, and a draft model of its tokenizer. */
export interface SpeculationFixture {
  name: string;
  path: string;
  prompt: number[];
  /**
   * A draft model: llama.cpp's quantization of the same checkpoint where the fixtures hold one
   * (Q4_K_M of the HF fixtures, Q2_K of fortune), else the model itself.
   */
  draft: string;
}

/**
 * Every fixture model: the three HF fixtures, fortune, and each family's GGUF but the hybrids'. Each prompt
 * holds 180 of the ids 0-255 once (in a fixed shuffle; one family's context is 256), so that
 * with eager prompt lookup most tokens these random models output have occurred before and get
 * a draft, then a short pattern three times.
 */
export async function speculationFixtures(): Promise<SpeculationFixture[]> {
  const every = Array.from({ length: 180 }, (_, i) => (i * 167 + 13) % 256);
  const out: SpeculationFixture[] = MODELS.map((m) => ({
    name: m.name,
    path: m.dir.pathname,
    prompt: [
      ...every,
      ...(m.name === "fortune" ? bytes("la la la la la la") : [1, 5, 9, 13, 1, 5, 9, 13]),
    ],
    draft: `${FIXTURES}llamacpp/${m.name}/${m.name === "fortune" ? "Q2_K" : "Q4_K_M"}.gguf`,
  }));
  const families: string[] = JSON.parse(
    await Deno.readTextFile(`${FIXTURES}families/index.json`),
  ).families;
  for (const f of families) {
    const dir = `${FIXTURES}families/${f}/`;
    const m = JSON.parse(await Deno.readTextFile(`${dir}manifest.json`));
    // Hybrid families refuse speculative decoding (their recurrent state has no rollback yet):
    // `hybrid_engine_test.ts` checks the refusal.
    if (archByGguf(m.architecture)?.kinds !== undefined) continue;
    const t: number[] = m.tokens.slice(0, 8);
    const path = `${dir}model.gguf`;
    out.push({ name: f, path, prompt: [...every, ...t, ...t, ...t], draft: path });
  }
  return out;
}

/** A started engine on `path` on the shared test device (32 KV blocks unless told otherwise). */
export async function engineOn(
  path: string,
  name: string,
  o: Partial<WebGpuEngineOptions>,
): Promise<WebGpuEngine> {
  const e = new WebGpuEngine({
    files: dirFiles(path),
    name,
    gpu: await testGpu(),
    kvBlocks: 32,
    ...o,
  });
  await e.start(0n);
  return e;
}

/**
 * `prompts` (40 greedy tokens each) on fortune with `speculative` in a cache of 8 blocks (two
 * such sequences at once), beside requests for `prompts[0]` stopped after each of `stopsAfter`
 * tokens: the same tokens as without speculation, preemptions, accepted drafts, the stopped
 * requests `cancelled` and every block freed.
 */
export async function checkPreempted(
  speculative: SpeculativeOptions,
  prompts: number[][],
  stopsAfter: number[],
): Promise<void> {
  const req = (p: number[]) => request(p, { stop_conditions: { max_tokens: 40 } });
  const plain = await fortuneEngine();
  await plain.start(0n);
  const want = [];
  try {
    for (const p of prompts) want.push((await collect(plain, req(p))).ids);
  } finally {
    await plain.cleanup();
  }
  const spec = await fortuneEngine({ kvBlocks: 8, speculative });
  await spec.start(0n);
  try {
    const stopped = stopsAfter.map(async (after) => {
      const ctx = new RequestContext();
      let n = 0;
      let finish: unknown;
      for await (const c of spec.generate(req(prompts[0]!), ctx)) {
        n += c.token_ids.length;
        finish = c.finish_reason ?? finish;
        if (n >= after) ctx.stop();
      }
      return finish;
    });
    const got = await Promise.all(prompts.map((p) => collect(spec, req(p))));
    deepStrictEqual(await Promise.all(stopped), stopsAfter.map(() => "cancelled"));
    deepStrictEqual(got.map((g) => g.ids), want);
    ok(spec.steps.preemptions > 0, "the cache was too small for all at once");
    ok(spec.speculation.numAcceptedTokens > 0);
    equal(spec.usedBlocks, 0);
  } finally {
    await spec.cleanup();
  }
}
