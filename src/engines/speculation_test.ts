import { deepStrictEqual, strictEqual as equal, throws } from "node:assert/strict";
import { RequestContext } from "../contract/engine.ts";
import { EngineError } from "../contract/errors.ts";
import type { PreprocessedRequest } from "../contract/types.ts";
import { Sequence } from "./sequence.ts";
import { ngramDrafter, promptLookup } from "./prompt_lookup.ts";
import {
  MAX_DRAFT_BACKOFF,
  speculationCounts,
  speculativeConfig,
  speculativeSettings,
  takeVerified,
} from "./speculation.ts";

Deno.test("prompt lookup drafts what followed the latest earlier occurrence of the longest suffix", () => {
  // [7 8 9] recurs at 1 (followed by 4 5) and at 6 (followed by 1 2 3): the latest wins.
  const t = [0, 7, 8, 9, 4, 5, 7, 8, 9, 1, 2, 3, 6, 7, 8, 9];
  deepStrictEqual(promptLookup(t, 3, 4, 2), [1, 2, 3]);
  deepStrictEqual(promptLookup(t, 2, 4, 2), [1, 2], "at most k");
  // The longest suffix first: [5 6 7] occurs once, followed by 0; [6 7] alone later, then 9.
  const u = [5, 6, 7, 0, 6, 7, 9, 5, 6, 7];
  deepStrictEqual(promptLookup(u, 1, 3, 2), [0]);
  deepStrictEqual(promptLookup(u, 1, 2, 2), [9]);
  deepStrictEqual(promptLookup([1, 2, 3, 4], 4, 4, 2), [], "no suffix recurs");
  deepStrictEqual(promptLookup([1, 2, 3, 1], 4, 4, 2), [], "shorter than the shortest suffix");
  deepStrictEqual(promptLookup([1, 2, 3, 1], 2, 4, 1), [2, 3]);
  deepStrictEqual(promptLookup([], 4, 4, 1), []);
  deepStrictEqual(promptLookup([3], 4, 4, 1), []);
});

Deno.test("prompt lookup repeats a period shorter than the draft", () => {
  deepStrictEqual(promptLookup([4, 4, 4], 5, 4, 2), [4, 4, 4, 4, 4]);
  deepStrictEqual(promptLookup([9, 1, 2, 1, 2], 5, 4, 2), [1, 2, 1, 2, 1]);
  deepStrictEqual(promptLookup([5, 1, 2, 3, 1, 2, 3], 7, 3, 3), [1, 2, 3, 1, 2, 3, 1]);
});

Deno.test("speculative settings: defaults, and a typed error naming the bad field", () => {
  deepStrictEqual(speculativeSettings({ method: "ngram" }), {
    method: "ngram",
    numSpeculativeTokens: 4,
    promptLookupMax: 4,
    promptLookupMin: 2,
  });
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ method: "draft_model" }, /speculative\.model/],
    [{ method: "draft_model", model: "d", kvBlocks: -1 }, /kvBlocks/],
    [{ method: "eagle" }, /speculative\.method/],
    [{ method: "ngram", numSpeculativeTokens: 0 }, /numSpeculativeTokens/],
    [{ method: "ngram", numSpeculativeTokens: 2.5 }, /numSpeculativeTokens/],
    [{ method: "ngram", numSpeculativeTokens: 17 }, /numSpeculativeTokens/],
    [{ method: "ngram", promptLookupMax: 2, promptLookupMin: 3 }, /promptLookupMin/],
    [{ method: "ngram", promptLookupMin: "2" }, /promptLookupMin/],
  ];
  for (const [o, why] of bad) {
    throws(
      () => speculativeSettings(o as never),
      (e) => e instanceof EngineError && e.type === "InvalidArgument" && why.test(e.message),
      JSON.stringify(o),
    );
  }
});

function sequence(overrides: Partial<PreprocessedRequest> = {}): Sequence {
  return new Sequence(
    {
      model: "m",
      token_ids: [1, 2, 3],
      stop_conditions: { max_tokens: 10 },
      sampling_options: {},
      output_options: {},
      eos_token_ids: [0],
      annotations: [],
      ...overrides,
    },
    new RequestContext(),
    100,
  );
}

const rows = (...tokens: number[]) => tokens.map((token) => ({ token, logprob: -1 }));

Deno.test("a verified draft keeps tokens up to the first row that drew something else", () => {
  const counts = speculationCounts(3);
  const seq = sequence();
  seq.computed = 3;
  equal(takeVerified(seq, [5, 6, 7], rows(5, 6, 9, 4), counts), 2);
  deepStrictEqual(seq.tokens, [1, 2, 3, 5, 6, 9], "row 2 drew 9 where 7 was drafted: 9 ends it");
  equal(seq.computed, 5, "the two accepted drafts' K/V count as computed");
  equal(takeVerified(seq, [1, 1, 1], rows(2, 1, 1, 1), counts), 0);
  deepStrictEqual(seq.tokens.slice(6), [2]);
  equal(takeVerified(seq, [4, 4, 4], rows(4, 4, 4, 8), counts), 3);
  deepStrictEqual(seq.tokens.slice(7), [4, 4, 4, 8], "all three drafts and the bonus row");
  deepStrictEqual(counts, {
    numSpecTokens: 3,
    numDrafts: 3,
    numDraftTokens: 9,
    numAcceptedTokens: 5,
    numAcceptedTokensPerPos: [2, 2, 1],
  });
});

Deno.test("a verified draft stops at EOS, at a stop token and at max_tokens", () => {
  const counts = speculationCounts(4);
  const eos = sequence();
  equal(takeVerified(eos, [5, 0, 6, 7], rows(5, 0, 6, 7, 8), counts), 1);
  equal(eos.finished, true);
  deepStrictEqual(eos.tokens.slice(3), [5]);
  const stop = sequence({ stop_conditions: { max_tokens: 10, stop_token_ids: [6] } });
  takeVerified(stop, [5, 6, 7, 8], rows(5, 6, 7, 8, 9), counts);
  deepStrictEqual(stop.tokens.slice(3), [5, 6], "the stop token is shown, nothing after it");
  const short = sequence({ stop_conditions: { max_tokens: 2 } });
  takeVerified(short, [5, 6, 7, 8], rows(5, 6, 7, 8, 9), counts);
  deepStrictEqual(short.tokens.slice(3), [5, 6]);
  equal(short.finished, true);
});

Deno.test("the drafter backs off after misses and resets after an accepted draft", () => {
  const d = ngramDrafter(speculativeSettings({ method: "ngram" }));
  const seq = sequence({ token_ids: [1, 2, 3, 4] });
  equal(d.speculates(seq), true);
  deepStrictEqual(d.propose(seq, 4), [], "nothing recurs: a miss");
  const waits: number[] = [];
  for (let miss = 1; miss <= 8; miss++) {
    let n = 0;
    while (!d.speculates(seq)) {
      seq.generated++;
      n++;
    }
    waits.push(n);
    d.propose(seq, 4);
  }
  deepStrictEqual(waits, [1, 2, 4, 8, 16, 32, MAX_DRAFT_BACKOFF, MAX_DRAFT_BACKOFF]);
  d.verified(seq, 4, 1, 0);
  equal(d.speculates(seq), true, "an accepted token resets the backoff");
  d.verified(seq, 4, 0, 0);
  equal(d.speculates(seq), false, "a wholly rejected draft is a miss");
  seq.generated++;
  equal(d.speculates(seq), true);
  d.verified(seq, 4, 2, 2.5);
  equal(d.speculates(seq), false, "2 accepted where the drain cost 2.5 steps: a miss");
  seq.generated += 2;
  d.verified(seq, 4, 3, 2.5);
  equal(d.speculates(seq), true, "3 accepted against 2.5 pays: reset");
  const guided = new Sequence(
    { ...sequence().request, sampling_options: { bad_words_token_ids: [[1, 2]] } },
    new RequestContext(),
    100,
  );
  equal(d.speculates(guided), false, "a sequence sampled one known token at a time never does");
});

Deno.test("vLLM's --speculative-config JSON: snake_case keys, checked; bad JSON and keys refused", () => {
  deepStrictEqual(speculativeConfig('{"method":"ngram","num_speculative_tokens":6}'), {
    method: "ngram",
    numSpeculativeTokens: 6,
  });
  deepStrictEqual(speculativeConfig('{"model":"d/x.gguf","num_speculative_tokens":3}'), {
    method: "draft_model",
    model: "d/x.gguf",
    numSpeculativeTokens: 3,
  });
  deepStrictEqual(speculativeSettings({ method: "draft_model", model: "d" }), {
    method: "draft_model",
    model: "d",
    numSpeculativeTokens: 4,
  });
  for (
    const [json, why] of [
      ["{", /not JSON/],
      ["[1]", /object/],
      ['{"method":"ngram","k":3}', /unknown key "k"/],
      ['{"method":"ngram","prompt_lookup_min":0}', /promptLookupMin/],
      ['{"method":"medusa"}', /method/],
      ['{"method":"draft_model"}', /speculative\.model/],
      ['{"method":"ngram","model":"d"}', /only with method "draft_model"/],
      ['{"model":7}', /a path/],
      ['{"model":"d","prompt_lookup_max":3}', /only with method "ngram"/],
    ] as const
  ) {
    throws(
      () => speculativeConfig(json),
      (e) => e instanceof EngineError && e.type === "InvalidArgument" && why.test(e.message),
      json,
    );
  }
});
