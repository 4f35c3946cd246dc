/**
 * Checks every engine on the fortune model must pass through the contract, shared by the
 * engines' own tests: stop conditions (shown, hidden, EOS, `min_tokens`, `max_tokens: 0`), usage,
 * greedy logprobs, typed errors for bad requests, and other requests unharmed after them.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import type { LLMEngine } from "../../src/contract/engine.ts";
import { EngineError } from "../../src/contract/errors.ts";
import { bytes, collect, request } from "./fortune_engine.ts";

/**
 * Start `e` (an engine serving fortune, context 1024), run the checks, clean it up, and check that
 * a request after cleanup fails with `EngineShutdown`.
 */
export async function checkStopsUsageAndBadInput(e: LLMEngine): Promise<void> {
  await e.start(0n);
  try {
    await checks(e);
  } finally {
    await e.cleanup();
  }
  await rejects(
    collect(e, request([256])),
    (err: unknown) => err instanceof EngineError && err.type === "EngineShutdown",
  );
}

async function checks(e: LLMEngine): Promise<void> {
  const p = bytes("The ");
  const free = await collect(e, request(p, { stop_conditions: { max_tokens: 12 } }));
  equal(free.last.finish_reason, "length");
  deepStrictEqual(free.last.completion_usage, {
    prompt_tokens: p.length,
    completion_tokens: 12,
    total_tokens: p.length + 12,
  });
  const stopAt = free.ids[4]!;
  const cut = free.ids.indexOf(stopAt);
  const shown = await collect(
    e,
    request(p, { stop_conditions: { max_tokens: 12, stop_token_ids: [stopAt] } }),
  );
  deepStrictEqual(shown.ids, free.ids.slice(0, cut + 1));
  equal(shown.last.finish_reason, "stop");
  const hidden = await collect(
    e,
    request(p, { stop_conditions: { max_tokens: 12, stop_token_ids_hidden: [stopAt] } }),
  );
  deepStrictEqual(hidden.ids, free.ids.slice(0, cut));
  equal(hidden.last.completion_usage?.completion_tokens, cut);
  const eos = await collect(
    e,
    request(p, { eos_token_ids: [stopAt], stop_conditions: { max_tokens: 12 } }),
  );
  equal(eos.last.finish_reason, "eos");
  const late = await collect(
    e,
    request(p, { eos_token_ids: [stopAt], stop_conditions: { max_tokens: 12, min_tokens: 12 } }),
  );
  equal(late.last.finish_reason, "length");
  ok(!late.ids.includes(stopAt), "EOS banned until min_tokens");
  const zero = await collect(e, request(p, { stop_conditions: { max_tokens: 0 } }));
  deepStrictEqual([zero.chunks.length, zero.last.finish_reason], [1, "length"]);
  const lp = await collect(
    e,
    request(p, { output_options: { logprobs: 3 }, stop_conditions: { max_tokens: 3 } }),
  );
  const sampled = lp.chunks.filter((c) => c.token_ids.length > 0);
  equal(sampled.length, 3);
  for (const c of sampled) {
    equal(c.log_probs?.length, 1);
    const top = c.top_logprobs![0]!;
    equal(top.length, 3);
    equal(top[0]!.token_id, c.token_ids[0], "greedy: the chosen token is the top one");
    ok(Math.abs(top[0]!.logprob - c.log_probs![0]!) < 1e-6);
    ok(top[0]!.logprob >= top[1]!.logprob && top[1]!.logprob >= top[2]!.logprob);
  }
  const invalid = (what: string) => (err: unknown) =>
    err instanceof EngineError && err.type === "InvalidArgument" && err.message.includes(what);
  await rejects(collect(e, request([256, 300])), invalid("vocab"));
  await rejects(collect(e, request(new Array(1024).fill(65))), invalid("context"));
  await rejects(
    collect(e, request(p, { sampling_options: { temperature: -1 } })),
    invalid("temperature"),
  );
  // Bad structured-output options are refused by name, never answered as free text.
  await rejects(
    collect(e, request(p, { sampling_options: { guided_decoding: { json: true, foo: 1 } } })),
    invalid("sampling_options.guided_decoding.foo"),
  );
  await rejects(
    collect(
      e,
      request(p, { sampling_options: { guided_decoding: { choice: ["a"], backend: "outlines" } } }),
    ),
    invalid("sampling_options.guided_decoding.backend"),
  );
  // Masks that leave no token (the only allowed token is a stop token, banned before
  // min_tokens) fail the request, never answer a token it did not allow.
  await rejects(
    collect(
      e,
      request(p, {
        stop_conditions: { max_tokens: 4, min_tokens: 2, stop_token_ids: [65] },
        sampling_options: { temperature: 0, allowed_token_ids: [65] },
      }),
    ),
    invalid("no token is allowed at output position 0"),
  );
  // Others keep running after bad input.
  equal((await collect(e, request(p))).last.finish_reason, "length");
}
