/**
 * `checkRequest`'s refusal of what an engine cannot honour, on requests parsed from Dynamo's
 * wire JSON: a field the engine does not know, inside the sections that shape the output, is
 * refused by name unless its value asks for nothing (Dynamo's `null` for an unset option).
 */
import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { parseRequest } from "../contract/wire.ts";
import { checkRequest } from "./admission.ts";

const wire = (extra: Record<string, Record<string, unknown>>) =>
  parseRequest({
    token_ids: [1, 2, 3],
    stop_conditions: { max_tokens: 4, ...extra.stop_conditions },
    sampling_options: { temperature: 0, ...extra.sampling_options },
    output_options: { ...extra.output_options },
    eos_token_ids: [0],
  });

function refusedAs(request: ReturnType<typeof wire>, field: string): void {
  throws(() => checkRequest(request, 100, 64), (e: unknown) => {
    strictEqual(e instanceof EngineError, true);
    const err = e as EngineError;
    strictEqual(err.type, "InvalidArgument");
    strictEqual(err.message.startsWith(`request.${field}: `), true, err.message);
    strictEqual(err.param, field);
    return true;
  });
}

Deno.test("an unknown field that would shape the output is refused by name, in every section", () => {
  refusedAs(wire({ sampling_options: { logit_bias: { "5": 10 } } }), "sampling_options.logit_bias");
  refusedAs(
    wire({ sampling_options: { use_beam_search: true } }),
    "sampling_options.use_beam_search",
  );
  refusedAs(
    wire({ stop_conditions: { max_thinking_tokens: 8 } }),
    "stop_conditions.max_thinking_tokens",
  );
  refusedAs(wire({ output_options: { formatted_prompt: "x" } }), "output_options.formatted_prompt");
  // The same bad request again is refused the same way (nothing is left behind by the first).
  refusedAs(wire({ sampling_options: { logit_bias: { "5": 10 } } }), "sampling_options.logit_bias");
});

Deno.test("unknown fields that ask for nothing (null, false, empty) are accepted", () => {
  const request = wire({
    sampling_options: { use_beam_search: false, length_penalty: null, logit_bias: {} },
    stop_conditions: { max_thinking_tokens: null },
    output_options: { formatted_prompt: null, extra: [] },
  });
  checkRequest(request, 100, 64);
  // Kept for a round trip, as the wire parser promises.
  deepStrictEqual(request.sampling_options.unknown_fields, {
    use_beam_search: false,
    length_penalty: null,
    logit_bias: {},
  });
});

Deno.test("a thousand requests with an unhonoured field in a row are each refused", () => {
  let refused = 0;
  for (let i = 0; i < 1000; i++) {
    try {
      checkRequest(wire({ sampling_options: { [`field_${i % 7}`]: i + 1 } }), 100, 64);
    } catch (e) {
      if (e instanceof EngineError && e.type === "InvalidArgument") refused++;
    }
  }
  strictEqual(refused, 1000);
  checkRequest(wire({}), 100, 64);
});
