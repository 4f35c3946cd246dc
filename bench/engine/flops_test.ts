/** `flops.ts`: prefill FLOPs per token from a shape's config, and the fraction of the FMA probe. */
import { ok, strictEqual as equal } from "node:assert/strict";
import { parseConfig } from "../../src/model/config.ts";
import { prefillFlopsPerToken, withFlops } from "./flops.ts";

const shape = async (name: string) =>
  parseConfig(await Deno.readTextFile(new URL(`./shapes/${name}.json`, import.meta.url)));

Deno.test("prefill FLOPs per token: 2 per weight of the decoder layers' matrices; none for MoE", async () => {
  // SmolLM2-135M: 30 layers of q, o (576x576), k, v (192x576), gate, up, down (1536x576).
  const perLayer = 576 * (576 + 192 + 192 + 576) + 3 * 1536 * 576;
  equal(prefillFlopsPerToken(await shape("smollm2-135m")), 2 * 30 * perLayer);
  equal(prefillFlopsPerToken(await shape("qwen3-30b-a3b")), undefined);
  const row = { prompt_tokens: 512, ttft_s: 2, tokens_per_s: 256, runs: 1, ttft_s_all: [2] };
  const fma = {
    threads: 1,
    rounds: 1,
    seconds_per_dispatch: 1,
    gflop_per_s: 100,
    timer: "wall" as const,
  };
  const out = withFlops(row, 1e9, fma);
  equal(out.gflop_per_s, 256);
  equal(out.fraction_of_fma, 2.56);
  ok(withFlops(row, undefined, fma).fraction_of_fma === undefined);
});
