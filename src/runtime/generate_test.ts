import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { GpuModel } from "./gpu_model.ts";
import { generateTokens } from "./generate.ts";
import { parseReference } from "../reference/verify.ts";
import { testGpu } from "../../test/support/gpu.ts";
import { MODELS } from "../../test/support/models.ts";

const fortune = MODELS.find((m) => m.name === "fortune")!.dir.pathname;

Deno.test("greedy generation on the GPU reproduces HF's greedy continuation of the fortune model", async () => {
  const gpu = await testGpu();
  const reference = parseReference(await Deno.readTextFile(`${fortune}reference.json`));
  const model = await GpuModel.load(gpu, dirFiles(fortune), { kvBlocks: 8 });
  try {
    // Compare up to the first near-tie: a margin within twice the f16 tolerance (3e-2) may flip,
    // and after a flip the continuations differ by design.
    const steps = (margins: number[]) => {
      const tie = margins.findIndex((m) => m <= 6e-2);
      return tie < 0 ? margins.length : tie;
    };
    const prompts = reference.prompts.filter((p) => steps(p.greedy_margins) >= 5);
    ok(prompts.length >= 2, "at least two prompts with five clear greedy steps");
    for (const p of prompts) {
      const n = steps(p.greedy_margins);
      const got: number[] = [];
      for await (
        const { token, logprob } of generateTokens(model, p.input_ids, {
          maxTokens: n,
          temperature: 0,
        })
      ) {
        got.push(token);
        ok(logprob <= 0 && Number.isFinite(logprob));
      }
      deepStrictEqual(got, p.greedy_tokens.slice(0, n));
    }
  } finally {
    model.destroy();
  }
});

Deno.test("seeded sampling reproduces its tokens; another seed differs; stop tokens end it", async () => {
  const gpu = await testGpu();
  const model = await GpuModel.load(gpu, dirFiles(fortune), { kvBlocks: 8 });
  try {
    const run = async (seed: number, stopTokens: number[] = []) => {
      const out: number[] = [];
      const opts = { maxTokens: 24, temperature: 1.0, top_p: 0.95, seed, stopTokens };
      for await (const { token } of generateTokens(model, [256, 84, 104, 101], opts)) {
        out.push(token);
      }
      return out;
    };
    const a = await run(11), b = await run(11), c = await run(12);
    deepStrictEqual(a, b);
    ok(JSON.stringify(a) !== JSON.stringify(c));
    const stopped = await run(11, [a[3]!]);
    equal(stopped.length, a.indexOf(a[3]!) + 1);
  } finally {
    model.destroy();
  }
});
