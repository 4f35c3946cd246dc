/** Fuzzed Dynamo wire JSON: requests and output chunks parse or give an `EngineError`. */
import type { PreprocessedRequest } from "../../src/contract/types.ts";
import { validateRequest } from "../../src/contract/validate.ts";
import { parseOutput, parseRequest } from "../../src/contract/wire.ts";
import { fuzz, mutateBytes, mutateJson } from "./fuzz.ts";

const REQUEST = {
  model: "m",
  token_ids: [1, 2, 3],
  stop_conditions: {
    max_tokens: 8,
    stop: ["\n"],
    stop_token_ids: [2],
    stop_token_ids_hidden: [3],
    min_tokens: 1,
    ignore_eos: false,
  },
  sampling_options: {
    n: 1,
    best_of: 1,
    presence_penalty: 0,
    frequency_penalty: 0,
    repetition_penalty: 1,
    temperature: 0.7,
    top_p: 0.9,
    top_k: 40,
    min_p: 0.05,
    seed: 7,
    allowed_token_ids: [1, 2],
    bad_words_token_ids: [[4, 5]],
    guided_decoding: { json: {} },
  },
  output_options: { logprobs: 1, prompt_logprobs: 0, skip_special_tokens: true },
  eos_token_ids: [2],
  annotations: ["a"],
  routing: {},
  extra_args: {},
};
const OUTPUT = {
  token_ids: [5],
  tokens: ["x"],
  text: "x",
  cum_log_probs: -1,
  log_probs: [-1],
  top_logprobs: [[]],
  finish_reason: "stop",
  stop_reason: 2,
  index: 0,
  completion_usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
};
const encode = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const decode = (b: Uint8Array) => new TextDecoder().decode(b);

Deno.test("fuzzed wire requests: parseRequest and validateRequest give EngineErrors only", async () => {
  await fuzz("wire request", { seed: 0x7769_7265 }, (r) => {
    const value = mutateJson(REQUEST, r);
    if (r() < 0.5) validateRequest(value as PreprocessedRequest);
    else parseRequest(r() < 0.3 ? decode(mutateBytes(encode(REQUEST), r)) : value);
  });
});

Deno.test("fuzzed wire outputs: parseOutput gives EngineErrors only", async () => {
  await fuzz("wire output", { seed: 0x6f75_7470 }, (r) => {
    parseOutput(r() < 0.3 ? decode(mutateBytes(encode(OUTPUT), r)) : mutateJson(OUTPUT, r));
  });
});
