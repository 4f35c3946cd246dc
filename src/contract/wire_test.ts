import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "./errors.ts";
import { parseFinishReason, parseOutput, parseRequest, requestToWire, toWire } from "./wire.ts";
import { usage } from "./output.ts";

/** A request shaped like the JSON Dynamo's preprocessor sends, with fields Kiln does not model. */
const DYNAMO_REQUEST = {
  model: "Qwen/Qwen2.5-0.5B-Instruct",
  token_ids: [151644, 872, 198, 9707],
  batch_token_ids: null,
  prompt_embeds: null,
  stop_conditions: {
    max_tokens: 64,
    stop: ["\n\n"],
    stop_token_ids_hidden: [151645],
    min_tokens: null,
    ignore_eos: false,
    max_thinking_tokens: null,
  },
  sampling_options: {
    n: null,
    best_of: null,
    presence_penalty: 0.5,
    frequency_penalty: null,
    repetition_penalty: 1.1,
    temperature: 0.7,
    top_p: 0.9,
    top_k: 40,
    min_p: 0.05,
    use_beam_search: null,
    length_penalty: null,
    seed: 1234,
    include_stop_str_in_output: null,
    guided_decoding: { json: { type: "object" }, backend: null },
  },
  output_options: {
    logprobs: 2,
    prompt_logprobs: null,
    skip_special_tokens: true,
    formatted_prompt: null,
  },
  eos_token_ids: [151645, 151643],
  mdc_sum: "6d0e5b1d",
  annotations: ["formatted_prompt"],
  routing: { backend_instance_id: 7, dp_rank: null },
  router_config_override: null,
  extra_args: { ignore_this: [1, 2] },
};

Deno.test("parseRequest reads Dynamo's JSON with snake_case fields", () => {
  const req = parseRequest(JSON.stringify(DYNAMO_REQUEST));
  equal(req.model, "Qwen/Qwen2.5-0.5B-Instruct");
  deepStrictEqual(req.token_ids, [151644, 872, 198, 9707]);
  equal(req.stop_conditions.max_tokens, 64);
  deepStrictEqual(req.stop_conditions.stop, ["\n\n"]);
  deepStrictEqual(req.stop_conditions.stop_token_ids_hidden, [151645]);
  equal(req.stop_conditions.min_tokens, undefined, "null reads as absent");
  equal(req.sampling_options.temperature, 0.7);
  equal(req.sampling_options.top_k, 40);
  equal(req.sampling_options.seed, 1234);
  equal(req.output_options.logprobs, 2);
  deepStrictEqual(req.eos_token_ids, [151645, 151643]);
  deepStrictEqual(req.annotations, ["formatted_prompt"]);
  deepStrictEqual(req.extra_args, { ignore_this: [1, 2] });
  equal(req.is_probe, undefined);
});

Deno.test("unknown fields survive a parse and re-serialise round trip untouched", () => {
  const wire = requestToWire(parseRequest(DYNAMO_REQUEST));
  equal(wire.mdc_sum, "6d0e5b1d");
  equal(wire.batch_token_ids, null);
  equal(wire.router_config_override, null);
  const stop = wire.stop_conditions as Record<string, unknown>;
  equal(stop.max_thinking_tokens, null);
  const sampling = wire.sampling_options as Record<string, unknown>;
  equal(sampling.use_beam_search, null);
  deepStrictEqual(sampling.guided_decoding, { json: { type: "object" }, backend: null });
  equal((wire.output_options as Record<string, unknown>).formatted_prompt, null);
  // A second round trip is a fixed point.
  deepStrictEqual(requestToWire(parseRequest(JSON.parse(JSON.stringify(wire)))), wire);
  // Known fields that were null are omitted; everything unknown is kept exactly.
  for (const [k, v] of Object.entries(DYNAMO_REQUEST)) {
    if (v !== null && typeof v !== "object") deepStrictEqual(wire[k], v, k);
  }
});

Deno.test("a minimal health-check payload parses with defaults and keeps its marker", () => {
  const req = parseRequest('{"token_ids":[1],"_HEALTH_CHECK":true}');
  deepStrictEqual(req.token_ids, [1]);
  equal(req.is_probe, true);
  equal(req.model, "");
  deepStrictEqual(req.stop_conditions, {});
  deepStrictEqual(req.sampling_options, {});
  deepStrictEqual(req.output_options, {});
  deepStrictEqual(req.eos_token_ids, []);
  const wire = requestToWire(req);
  equal(wire._HEALTH_CHECK, true);
  equal("is_probe" in wire, false);
  equal(
    requestToWire(parseRequest({ token_ids: [1], _HEALTH_CHECK: false }))._HEALTH_CHECK,
    undefined,
  );
});

function invalidArgument(fn: () => unknown, field: string): void {
  throws(fn, (e: unknown) => {
    ok(e instanceof EngineError, `expected EngineError, got ${e}`);
    equal(e.type, "InvalidArgument");
    ok(e.message.includes(field), `message ${JSON.stringify(e.message)} should name ${field}`);
    return true;
  });
}

Deno.test("bad requests get InvalidArgument naming the field", () => {
  invalidArgument(() => parseRequest("{}"), "token_ids");
  invalidArgument(() => parseRequest("{not json"), "JSON");
  invalidArgument(() => parseRequest("[1,2]"), "request");
  invalidArgument(() => parseRequest({ token_ids: "1,2" }), "token_ids");
  invalidArgument(() => parseRequest({ token_ids: [1, 2.5] }), "token_ids[1]");
  invalidArgument(() => parseRequest({ token_ids: [-1] }), "token_ids[0]");
  invalidArgument(
    () => parseRequest({ token_ids: [1], eos_token_ids: [1, "2"] }),
    "eos_token_ids[1]",
  );
  invalidArgument(
    () => parseRequest({ token_ids: [1], stop_conditions: { max_tokens: -4 } }),
    "stop_conditions.max_tokens",
  );
  invalidArgument(
    () => parseRequest({ token_ids: [1], sampling_options: { temperature: -0.5 } }),
    "temperature",
  );
  invalidArgument(() => parseRequest({ token_ids: [1], sampling_options: { top_p: 0 } }), "top_p");
  invalidArgument(
    () => parseRequest({ token_ids: [1], sampling_options: { top_p: 1.01 } }),
    "top_p",
  );
  invalidArgument(() => parseRequest({ token_ids: [1], sampling_options: { top_k: -2 } }), "top_k");
  invalidArgument(
    () => parseRequest({ token_ids: [1], sampling_options: { temperature: "hot" } }),
    "sampling_options.temperature",
  );
  invalidArgument(
    () =>
      parseRequest({ token_ids: [1], sampling_options: { bad_words_token_ids: [[1], [2, -3]] } }),
    "bad_words_token_ids[1][1]",
  );
  invalidArgument(() => parseRequest({ token_ids: [1], stop_conditions: [] }), "stop_conditions");
});

Deno.test("accepted edge values: top_p 1, top_k -1, temperature 0, max_tokens 0", () => {
  const req = parseRequest({
    token_ids: [],
    stop_conditions: { max_tokens: 0 },
    sampling_options: { top_p: 1, top_k: -1, temperature: 0 },
  });
  equal(req.stop_conditions.max_tokens, 0);
  equal(req.sampling_options.top_k, -1);
});

Deno.test("finish reasons use Dynamo's wire names; abort reads as cancelled", () => {
  for (const r of ["eos", "length", "stop", "cancelled", "content_filter"] as const) {
    equal(parseFinishReason(r), r);
  }
  equal(parseFinishReason("abort"), "cancelled");
  deepStrictEqual(parseFinishReason({ error: "boom" }), { error: "boom" });
  invalidArgument(() => parseFinishReason("done"), "finish_reason");
  deepStrictEqual(toWire({ token_ids: [], finish_reason: { error: "x" } }), {
    token_ids: [],
    finish_reason: { error: "x" },
  });
});

Deno.test("toWire writes snake_case JSON and parseOutput reads it back", () => {
  const out = {
    token_ids: [5, 6],
    text: "hi",
    log_probs: [-0.1, -0.2],
    top_logprobs: [[{ rank: 1, token_id: 5, logprob: -0.1 }], [{
      rank: 1,
      token_id: 6,
      logprob: -0.2,
    }]],
    finish_reason: "stop" as const,
    stop_reason: 6,
    index: 0,
    completion_usage: usage(3, 2),
  };
  const wire = toWire(out);
  deepStrictEqual(JSON.parse(JSON.stringify(wire)), {
    token_ids: [5, 6],
    text: "hi",
    log_probs: [-0.1, -0.2],
    top_logprobs: out.top_logprobs,
    finish_reason: "stop",
    stop_reason: 6,
    index: 0,
    completion_usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
  });
  deepStrictEqual(parseOutput(JSON.stringify(wire)), out);
  const withExtra = parseOutput({
    token_ids: [1],
    disaggregated_params: { a: 1 },
    finish_reason: "abort",
  });
  equal(withExtra.finish_reason, "cancelled");
  deepStrictEqual(toWire(withExtra).disaggregated_params, { a: 1 });
});
