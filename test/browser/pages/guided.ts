/**
 * Guided decoding in Chromium: WebGpuEngine on fortune inside a Web Worker (`WorkerEngine`,
 * SwiftShader WebGPU) starts its grammar worker (XGrammar, nested in the engine's worker) on the
 * first constrained request; a JSON Schema, a regex and a choice constrain sampled output; a bad
 * regex is `InvalidArgument` naming the option. Hostile constraints (`hostile_guides.ts`): 200
 * refused among valid and free requests, and the same refused constraint 20 times, in the
 * engine's worker; then the same in Kiln's SharedWorker host, which has no `Worker` in Chromium
 * (checked: XGrammar runs on its thread there, with a fresh instance after each fault).
 */
import { RequestContext } from "../../../src/contract/engine.ts";
import type { LLMEngine } from "../../../src/contract/engine.ts";
import type { PreprocessedRequest } from "../../../src/contract/types.ts";
import { WorkerEngine } from "../../../src/worker/client.ts";
import { type KilnModel, openModel } from "../../../src/worker/open.ts";
import {
  assertRefusal,
  hostileRequest,
  hostileRun,
  refused,
  runBounded,
} from "../../support/hostile_guides.ts";
import { runChecks } from "./report.ts";

const engine = new WorkerEngine(
  () =>
    new Worker(new URL("../../../src/adapters/browser/worker.ts", import.meta.url), {
      type: "module",
    }),
  {
    model: {
      kind: "url",
      base: new URL("/models/fortune/", location.href).href,
      name: "fortune",
    },
    kvBlocks: 16,
  },
);
await engine.start(0n);

const bytes = (s: string) => [...new TextEncoder().encode(s)];
const guided = (prompt: string, g: Record<string, unknown>, seed: number): PreprocessedRequest => ({
  model: "fortune",
  token_ids: bytes(prompt),
  stop_conditions: { max_tokens: 200 },
  sampling_options: { temperature: 1, seed, guided_decoding: g },
  output_options: {},
  eos_token_ids: [257],
  annotations: [],
});

async function run(req: PreprocessedRequest): Promise<string> {
  const ids: number[] = [];
  let finish: unknown;
  for await (const c of engine.generate(req, new RequestContext())) {
    ids.push(...c.token_ids);
    finish = c.finish_reason ?? finish;
  }
  if (finish !== "eos") throw new Error(`finish ${JSON.stringify(finish)}`);
  return new TextDecoder().decode(Uint8Array.from(ids));
}

const schema = {
  type: "object",
  properties: {
    mood: { enum: ["calm", "wild"] },
    score: { type: "integer", minimum: 1, maximum: 9 },
    tags: { type: "array", items: { type: "boolean" }, minItems: 1, maxItems: 2 },
  },
  required: ["mood", "score", "tags"],
  additionalProperties: false,
};

/** The same refused constraints `times` times each: refused every time, the later ones at once. */
async function sameRefused(e: LLMEngine, times: number): Promise<string> {
  const out: string[] = [];
  for (const k of [1, 10, 11]) {
    const { g, key } = refused(k);
    const t0 = performance.now();
    for (let i = 0; i < times; i++) {
      const err = await runBounded(e, hostileRequest("x", g, i), 20_000).then(() => 0, (x) => x);
      assertRefusal(err, key, `${key} #${k} try ${i}`);
    }
    out.push(`${key} #${k}: ${(performance.now() - t0).toFixed(0)} ms for ${times}`);
  }
  return out.join("; ");
}

/** Whether this page's workers can start workers (Kiln's SharedWorker asks the same). */
function sharedHasWorker(): Promise<string> {
  const code = "onconnect = (e) => e.ports[0].postMessage(typeof Worker);";
  const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
  const w = new SharedWorker(url);
  return new Promise((resolve) => {
    w.port.onmessage = (e) => resolve(String(e.data));
    w.port.start();
  });
}

let shared: KilnModel | undefined;
const sharedEngine = async () =>
  (shared ??= await openModel({
    model: "/models/fortune/",
    share: true,
    cache: false,
    engine: { kvBlocks: 16 },
  })).engine;

await runChecks([
  ["json schema", async () => {
    const t0 = performance.now();
    const out = await run(guided("Your fortune: ", { json: schema }, 1));
    const v = JSON.parse(out);
    const keys = Object.keys(v).sort().join(",");
    if (keys !== "mood,score,tags") throw new Error(`keys ${keys}: ${out}`);
    if (!["calm", "wild"].includes(v.mood)) throw new Error(out);
    if (!Number.isInteger(v.score) || v.score < 1 || v.score > 9) throw new Error(out);
    if (!Array.isArray(v.tags) || v.tags.length < 1 || v.tags.length > 2) throw new Error(out);
    return `${out} (${(performance.now() - t0).toFixed(0)} ms with XGrammar's load)`;
  }],
  ["regex", async () => {
    const out = await run(guided("Call ", { regex: "[0-9]{3}-(ab|cd)" }, 2));
    if (!/^[0-9]{3}-(ab|cd)$/.test(out)) throw new Error(out);
    return out;
  }],
  ["choice", async () => {
    const out = await run(guided("Will I? ", { choice: ["yes", "no"] }, 3));
    if (!["yes", "no"].includes(out)) throw new Error(out);
    return out;
  }],
  ["bad regex", async () => {
    try {
      await run(guided("x", { regex: "[0-9" }, 1));
    } catch (e) {
      const m = String((e as Error).message);
      if (m.includes("guided_decoding.regex")) return m;
      throw e;
    }
    throw new Error("not refused");
  }],
  [
    "200 refused among valid and free requests (grammar worker nested in the engine's)",
    async () => {
      const r = await hostileRun(engine, { refusedTotal: 200, perWave: 50, first: 7000 });
      if (r.refused !== 200 || r.valid !== 8 || r.free !== 4) throw new Error(JSON.stringify(r));
      return JSON.stringify(r);
    },
  ],
  ["the same refused constraints 20 times each", () => sameRefused(engine, 20)],
  ["a SharedWorker has no Worker in Chromium", async () => {
    await engine.cleanup();
    const kind = await sharedHasWorker();
    if (kind !== "undefined") throw new Error(`typeof Worker in a SharedWorker: ${kind}`);
    return `typeof Worker: ${kind}`;
  }],
  ["SharedWorker host: 100 refused among valid and free requests", async () => {
    const e = await sharedEngine();
    if (shared!.sharing !== "origin") throw new Error(`sharing ${shared!.sharing}`);
    const r = await hostileRun(e, { refusedTotal: 100, perWave: 50, first: 9000 });
    if (r.refused !== 100 || r.valid !== 4 || r.free !== 2) throw new Error(JSON.stringify(r));
    return JSON.stringify(r);
  }],
  [
    "SharedWorker host: the same refused constraints 20 times each",
    async () => sameRefused(await sharedEngine(), 20),
  ],
]);
await shared?.close();
