/** Issue 12: hostile values on the wire get `InvalidArgument` with a useful message. */
import { ok, throws } from "node:assert/strict";
import { describe } from "./describe.ts";
import { validateRequest } from "./validate.ts";
import { parseOutput, parseRequest } from "./wire.ts";
import type { PreprocessedRequest } from "./types.ts";
import { deepArray, invalid, TO_STRING } from "../../test/support/untrusted.ts";

Deno.test("describe: bounded and throw-free on deep arrays, toString objects, proxies, long strings", () => {
  const deep = describe(deepArray(10_000));
  ok(deep.startsWith("[[[") && deep.length <= 80, deep);
  ok(describe(TO_STRING) === '{"toString": 1}', describe(TO_STRING));
  const trap = new Proxy({}, {
    ownKeys() {
      throw new Error("trap");
    },
  });
  ok(describe(trap) === "a object", describe(trap));
  const long = describe("x".repeat(1e6));
  ok(long.length <= 80 && long.startsWith('"xxx'), long);
  ok(
    describe([1, "a", null, undefined, 2n, () => 0]) ===
      '[1, "a", null, undefined, 2n, a function]',
  );
  ok(describe(Array(100).fill(0), 1000).endsWith("…92 more]"));
  ok(describe(new Date(0)).startsWith("Date {"));
  ok(describe(Object.create(null)) === "{}");
  ok(describe("x", 3) === '"x"');
});

Deno.test("wire fields holding a 2,750-deep array or {toString:1} are InvalidArgument", () => {
  for (const bad of [deepArray(), TO_STRING]) {
    const base = { token_ids: [1, 2] };
    throws(() => parseRequest({ token_ids: bad }), invalid("request.token_ids"));
    throws(() => parseRequest({ token_ids: [1, bad] }), invalid("request.token_ids[1]"));
    throws(
      () => parseRequest({ ...base, stop_conditions: { stop: bad } }),
      invalid("request.stop_conditions.stop"),
    );
    throws(
      () => parseRequest({ ...base, stop_conditions: { stop: ["a", bad] } }),
      invalid("request.stop_conditions.stop[1]"),
    );
    throws(
      () => parseRequest({ ...base, sampling_options: { temperature: bad } }),
      invalid("request.sampling_options.temperature"),
    );
    throws(() => parseOutput({ token_ids: [bad] }), invalid("output.token_ids[0]"));
    throws(() => parseOutput({ finish_reason: bad }), invalid("output.finish_reason"));
  }
  throws(
    () => parseRequest(JSON.stringify({ token_ids: deepArray() })),
    invalid("request.token_ids[0]: expected a non-negative integer token id, got [[[[…1]]]]"),
  );
});

Deno.test("validateRequest refuses hostile values built in code, never a TypeError", () => {
  const req = (extra: Record<string, unknown>) =>
    ({
      token_ids: [1],
      stop_conditions: {},
      sampling_options: {},
      output_options: {},
      ...extra,
    }) as unknown as PreprocessedRequest;
  // Every engine reads the three sections: a request without one is refused, not a TypeError.
  for (const k of ["stop_conditions", "sampling_options", "output_options"]) {
    throws(() => validateRequest(req({ [k]: undefined })), invalid(`request.${k}`, "undefined"));
  }
  throws(
    () => validateRequest(req({ eos_token_ids: 2 })),
    invalid("request.eos_token_ids", "got 2"),
  );
  throws(() => validateRequest(req({ eos_token_ids: null })), invalid("eos_token_ids", "null"));
  throws(() => validateRequest(req({ token_ids: TO_STRING })), invalid("request.token_ids"));
  throws(() => validateRequest(req({ token_ids: [deepArray()] })), invalid("token_ids[0]"));
  for (const bad of [deepArray(), TO_STRING]) {
    throws(
      () => validateRequest(req({ sampling_options: { temperature: bad } })),
      invalid("sampling_options.temperature"),
    );
    for (const k of ["top_p", "min_p", "repetition_penalty", "presence_penalty", "top_k", "n"]) {
      throws(() => validateRequest(req({ sampling_options: { [k]: bad } })), invalid(k));
    }
    throws(
      () => validateRequest(req({ sampling_options: { best_of: 2, n: bad } })),
      invalid("sampling_options.n"),
    );
    throws(
      () => validateRequest(req({ stop_conditions: { max_tokens: bad } })),
      invalid("max_tokens"),
    );
    throws(
      () => validateRequest(req({ sampling_options: { bad_words_token_ids: bad } })),
      invalid("bad_words_token_ids"),
    );
  }
  throws(() => validateRequest(req({ stop_conditions: 5 })), invalid("request.stop_conditions"));
  throws(() => validateRequest(null as unknown as PreprocessedRequest), invalid("request"));
});

Deno.test("parseOutput of text that is not JSON is InvalidArgument", () => {
  throws(() => parseOutput("{"), invalid("output: not valid JSON"));
  throws(() => parseOutput("null"), invalid("output: expected an object, got null"));
  throws(() => parseOutput({ tokens: [1] }), invalid("output.tokens[0]"));
  throws(() => parseOutput({ log_probs: "x" }), invalid("output.log_probs"));
});
