/** Fuzzed Dynamo wire JSON: requests and output chunks parse or give `InvalidArgument`. */
import type { PreprocessedRequest } from "../../src/contract/types.ts";
import { validateRequest } from "../../src/contract/validate.ts";
import { parseOutput, parseRequest } from "../../src/contract/wire.ts";
import { mutateBytes, mutateJson } from "./fuzz.ts";
import { fuzz } from "./harness.ts";

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

interface WireInput {
  /** `validate`: validateRequest on a parsed value; `parse`: parseRequest on a value or text. */
  op: "validate" | "parse";
  value: unknown;
}

Deno.test("fuzzed wire requests: parseRequest and validateRequest refuse with InvalidArgument", async () => {
  await fuzz({
    name: "wire request",
    corpus: "wire_request",
    expect: ["InvalidArgument"],
    generate: (r): WireInput => {
      const value = mutateJson(REQUEST, r);
      if (r() < 0.5) return { op: "validate", value };
      return { op: "parse", value: r() < 0.3 ? decode(mutateBytes(encode(REQUEST), r)) : value };
    },
    run: ({ op, value }: WireInput) =>
      op === "validate" ? validateRequest(value as PreprocessedRequest) : parseRequest(value),
  });
});

Deno.test("fuzzed wire outputs: parseOutput refuses with InvalidArgument", async () => {
  await fuzz({
    name: "wire output",
    corpus: "wire_output",
    expect: ["InvalidArgument"],
    generate: (r) => r() < 0.3 ? decode(mutateBytes(encode(OUTPUT), r)) : mutateJson(OUTPUT, r),
    run: (value: unknown) => parseOutput(value),
  });
});
