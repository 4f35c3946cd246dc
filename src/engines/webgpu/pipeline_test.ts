/**
 * Decode with several steps in flight must stream exactly what waiting for every token streams:
 * seeded sampling with penalties, min_tokens, logprobs, stops found late, multi-token bad words
 * (which run unpipelined) and preemption.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import type { PreprocessedRequest } from "../../contract/types.ts";
import type { WebGpuEngine } from "./engine.ts";
import { bytes, collect, fortuneEngine, request } from "../../../test/support/fortune_engine.ts";

const sampled = (prompt: string, seed: number, extra: Partial<PreprocessedRequest> = {}) =>
  request(bytes(prompt), {
    stop_conditions: { max_tokens: 14 },
    sampling_options: {
      temperature: 0.9,
      top_p: 0.95,
      top_k: 40,
      repetition_penalty: 1.3,
      frequency_penalty: 0.4,
      presence_penalty: 0.2,
      seed,
    },
    output_options: { logprobs: 2 },
    ...extra,
  });

const REQUESTS: PreprocessedRequest[] = [
  sampled("You will ", 1),
  sampled("Love is ", 2, { stop_conditions: { max_tokens: 14, min_tokens: 10 } }),
  sampled("A friend ", 3),
  request(bytes("The best "), { stop_conditions: { max_tokens: 14, min_tokens: 4 } }),
  sampled("Luck ", 4, {
    sampling_options: { temperature: 0.8, seed: 4, bad_words_token_ids: [[101, 32], [33]] },
  }),
];

/** Run every request at once; a stop token taken from a first greedy run ends one of them. */
async function run(e: WebGpuEngine, reqs: PreprocessedRequest[]) {
  await e.start(0n);
  try {
    const out = await Promise.all(reqs.map((r) => collect(e, r)));
    equal(e.usedBlocks, 0);
    return out.map((r) => ({
      ids: r.ids,
      finish: r.last.finish_reason,
      usage: r.last.completion_usage,
      logprobs: r.chunks.flatMap((c) => c.log_probs ?? []).map((x) => x.toFixed(3)),
    }));
  } finally {
    await e.cleanup();
  }
}

Deno.test("pipelined decode streams the same tokens, finishes and usage as one step at a time", async () => {
  // A stop token that the greedy request produces after a few tokens, so steps run past it.
  const probe = await run(await fortuneEngine({ pipelineDepth: 1 }), [REQUESTS[3]!]);
  const stopAt = probe[0]!.ids[6]!;
  const reqs = [
    ...REQUESTS,
    request(bytes("The best "), { stop_conditions: { max_tokens: 14, stop_token_ids: [stopAt] } }),
  ];
  const sync = await fortuneEngine({ pipelineDepth: 1 });
  const one = await run(sync, reqs);
  equal(sync.steps.maxInFlight, 1);
  const piped = await fortuneEngine({ pipelineDepth: 6 });
  const six = await run(piped, reqs);
  deepStrictEqual(six, one);
  ok(piped.steps.maxInFlight > 1, `steps in flight: ${piped.steps.maxInFlight}`);
  ok(piped.steps.discardedTokens > 0, "the stop was found with steps already submitted past it");
  equal(one[5]!.finish, "stop");
  equal(one[1]!.ids.length >= 10, true);
});

Deno.test("pipelined decode under preemption: recomputed sequences stream what roomy ones do", async () => {
  const reqs = ["The ", "You ", "Love ", "Luck ", "A "].map((p) =>
    request(bytes(p), { stop_conditions: { max_tokens: 28 } })
  );
  const roomy = await run(await fortuneEngine({ pipelineDepth: 1 }), reqs);
  // 6 blocks of 16 tokens: five sequences growing to ~33 tokens cannot all stay.
  const tight = await fortuneEngine({ pipelineDepth: 6, kvBlocks: 6, maxNumSeqs: 5 });
  const got = await run(tight, reqs);
  deepStrictEqual(got, roomy);
  ok(tight.steps.preemptions > 0, "the small cache forced preemption");
});
