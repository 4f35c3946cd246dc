/**
 * Guided decoding in Chromium: WebGpuEngine on fortune inside a Web Worker (`WorkerEngine`,
 * SwiftShader WebGPU) loads XGrammar (its WASM, by dynamic import) on the first constrained
 * request; a JSON Schema, a regex and a choice constrain sampled output; a bad regex is
 * `InvalidArgument` naming the option.
 */
import { RequestContext } from "../../../src/contract/engine.ts";
import type { PreprocessedRequest } from "../../../src/contract/types.ts";
import { WorkerEngine } from "../../../src/worker/client.ts";
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
]);
await engine.cleanup();
