/** An engine's refusal reaches an OpenAI client naming the field the client sent. */
import { strictEqual as equal } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { clientError, openAIError } from "./errors.ts";

const param = (field: string | undefined, chat = false) =>
  openAIError(
    clientError(
      new EngineError("InvalidArgument", "x", field === undefined ? {} : { param: field }),
      chat,
    ),
  ).param;

Deno.test("clientError: the contract's field names become the OpenAI body's", () => {
  equal(param("sampling_options.top_p"), "top_p");
  equal(param("stop_conditions.min_tokens"), "min_tokens");
  equal(param("stop_conditions.stop_token_ids_hidden"), "stop_token_ids");
  equal(param("sampling_options.bad_words_token_ids[2]"), "bad_words_token_ids");
  equal(param("token_ids"), "prompt");
  equal(param("token_ids", true), "messages");
  equal(param("output_options.logprobs"), "logprobs");
  equal(param("output_options.logprobs", true), "top_logprobs");
  // The model's own EOS list is nothing the client sent.
  equal(param("eos_token_ids"), null);
  equal(param(undefined), null);
  const e = new EngineError("InvalidArgument", "why", { param: "top_p" });
  equal(clientError(e, false), e, "an OpenAI field is kept as it is");
});
