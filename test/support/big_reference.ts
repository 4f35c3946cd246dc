/**
 * Test-only: the big random model (`big_model.ts`) run by `WebGpuEngine` in Deno (lavapipe when
 * there is no GPU), from its path: the greedy tokens of `BIG_PROMPT` with their top logprobs, for
 * the browser test to compare Chromium's with. Makes the file first when it is missing.
 *
 * `deno run -A test/support/big_reference.ts` prints one JSON line:
 * `{ prompt, ids, top, loadSeconds, generateSeconds }` (`top[i]` the top-4 `[id, logprob]` of step i).
 * `KILN_BIG_STEPS` sets the tokens generated (default 2); `KILN_BIG_TIMEOUT_S` bounds the whole
 * run (default 900 s; past it the process exits 124 with a message).
 */
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { RequestContext } from "../../src/contract/engine.ts";
import { validateStream } from "../../src/contract/validate.ts";
import { WebGpuEngine } from "../../src/engines/webgpu/engine.ts";
import { BIG_PROMPT, ensureBigModel } from "./big_model.ts";

export interface BigReference {
  prompt: number[];
  ids: number[];
  top: [number, number][][];
  loadSeconds: number;
  generateSeconds: number;
}

/** Load the big model in `WebGpuEngine` and run the prompt greedily for `steps` tokens. */
export async function bigReference(steps: number): Promise<BigReference> {
  const { path } = await ensureBigModel();
  const t0 = performance.now();
  const engine = new WebGpuEngine({ files: dirFiles(path), name: "big", kvBlocks: 8 });
  await engine.start(0n);
  const t1 = performance.now();
  try {
    const request = {
      model: "big",
      token_ids: BIG_PROMPT,
      stop_conditions: { max_tokens: steps },
      sampling_options: { temperature: 0 },
      output_options: { logprobs: 4 },
      eos_token_ids: [],
      annotations: [],
    };
    const out: BigReference = {
      prompt: BIG_PROMPT,
      ids: [],
      top: [],
      loadSeconds: (t1 - t0) / 1000,
      generateSeconds: 0,
    };
    const stream = engine.generate(request, new RequestContext());
    for await (const c of validateStream(stream, { promptTokens: BIG_PROMPT.length })) {
      out.ids.push(...c.token_ids);
      for (const t of c.top_logprobs ?? []) {
        out.top.push(t.map((x): [number, number] => [x.token_id, x.logprob]));
      }
    }
    out.generateSeconds = (performance.now() - t1) / 1000;
    return out;
  } finally {
    await engine.cleanup();
  }
}

if (import.meta.main) {
  const limit = Number(Deno.env.get("KILN_BIG_TIMEOUT_S") ?? 900);
  const timer = setTimeout(() => {
    console.error(`big_reference: no result within ${limit} s`);
    Deno.exit(124);
  }, limit * 1000);
  const result = await bigReference(Number(Deno.env.get("KILN_BIG_STEPS") ?? 2));
  clearTimeout(timer);
  console.log(JSON.stringify(result));
  Deno.exit(0);
}
