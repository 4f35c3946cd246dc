/**
 * `WebGpuEngineOptions.kernelPaths`: an engine on the `gpu` kernel paths (on any adapter) says so
 * in its config and streams fortune's float64 greedy tokens for two requests at once, its steps
 * taking the GPU's kernels (a prefill of over 32 tokens through the tiled GEMM, decode through
 * 64-thread products and split-K attention); a device of the other kind with it is refused.
 */
import {
  deepStrictEqual as deepEqual,
  ok,
  rejects,
  strictEqual as equal,
} from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { parseReference } from "../../reference/verify.ts";
import { testGpu } from "../../../test/support/gpu.ts";
import { collect, FORTUNE, fortuneEngine, request } from "../../../test/support/fortune_engine.ts";

/**
 * Fortune's reference prompts 3 (36 tokens) and 0 (BOS alone), each with its greedy tokens up to
 * the first whose margin over the runner-up is under 0.25 (an f16 KV cache's logit error is
 * about 5e-3, so these cannot flip).
 */
async function referenceCases(): Promise<{ prompt: number[]; greedy: number[] }[]> {
  const ref = parseReference(await Deno.readTextFile(`${FORTUNE}reference.json`));
  return [3, 0].map((i) => {
    const p = ref.prompts[i]!;
    const narrow = p.greedy_margins.findIndex((m) => m < 0.25);
    return { prompt: p.input_ids, greedy: p.greedy_tokens.slice(0, narrow) };
  });
}

Deno.test("an engine on gpu kernel paths streams fortune's float64 greedy tokens, batched", async () => {
  const cases = await referenceCases();
  ok(cases[0]!.prompt.length > 32 && cases.every((c) => c.greedy.length >= 4));
  const e = await fortuneEngine({ gpu: await testGpu("gpu"), kernelPaths: "gpu" });
  const config = await e.start(0n);
  try {
    equal(config.runtime_data?.kernel_paths, "gpu");
    equal(config.runtime_data?.decode_products, "32 threads per row");
    const runs = await Promise.all(
      cases.map((c) =>
        collect(e, request(c.prompt, { stop_conditions: { max_tokens: c.greedy.length } }))
      ),
    );
    deepEqual(runs.map((r) => r.ids), cases.map((c) => c.greedy));
  } finally {
    await e.cleanup();
  }
});

Deno.test("kernelPaths that the device given does not take: start() refuses with InvalidArgument", async () => {
  const gpu = await testGpu();
  const other = gpu.caps.paths === "cpu" ? "gpu" : "cpu";
  const e = await fortuneEngine({ gpu, kernelPaths: other });
  await rejects(
    e.start(0n),
    (err: unknown) =>
      err instanceof EngineError && err.type === "InvalidArgument" &&
      err.message.includes(`kernelPaths ${other}`),
  );
});
