/** OpenAI bodies: fields honoured or refused by name, per-choice seeds, echo, stop_token_ids. */
import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { specFiles } from "../adapters/deno/file_source.ts";
import { loadText } from "../text/load.ts";
import { EngineError } from "../contract/errors.ts";
import { openAIError } from "./errors.ts";
import { choiceSeed, parseJob } from "./requests.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const text = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
const limits = { maxN: 8, contextLength: 512, maxLogprobs: 20 };
const job = (body: Record<string, unknown>, chat = false) =>
  parseJob(
    { model: "fortune", ...(chat ? { messages: [{ role: "user", content: "Hi" }] } : {}), ...body },
    chat,
    text,
    limits,
  );
const refused = (body: Record<string, unknown>, param: string, chat = false) =>
  throws(() => job(chat ? body : { prompt: "Hi", ...body }, chat), (e: unknown) => {
    ok(e instanceof EngineError, String(e));
    equal(e.type, "InvalidArgument");
    equal(e.param, param, e.message);
    equal(openAIError(e).status, 400);
    return true;
  });

Deno.test("fields Kiln would ignore are refused with 400 naming them", () => {
  refused({ logit_bias: { "65": 5 } }, "logit_bias");
  refused({ best_of: 3, n: 2 }, "best_of");
  refused({ echo: true, logprobs: 2 }, "echo");
  refused({ suffix: " the end" }, "suffix");
  refused({ frobnicate: 1 }, "frobnicate");
  refused({ messages: [{ role: "user", content: "x" }], echo: true }, "echo", true);
  refused(
    { messages: [{ role: "user", content: "x" }], tools: [{ type: "function" }] },
    "tools",
    true,
  );
  refused({ messages: [{ role: "user", content: "x" }], tool_choice: "auto" }, "tool_choice", true);
  // response_format, tools and tool_choice: structured_requests_test.ts.
  refused({ messages: [{ role: "user", content: "x" }], prompt: "x" }, "prompt", true);
});

Deno.test("fields that ask for nothing, and best_of = n, are accepted", () => {
  job({ prompt: "Hi", logit_bias: {}, best_of: 2, n: 2, user: "u1", suffix: "" });
  job({ tools: [], tool_choice: "none", response_format: { type: "text" } }, true);
});

Deno.test("per-choice seeds are distinct for every allowed seed, and seeds stay distinct", () => {
  for (const seed of [0, -1, -3, 2 ** 52, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]) {
    const j = job({ prompt: "Hi", seed, n: 8 });
    const seeds = Array.from({ length: 8 }, (_, i) => j.request(i).sampling_options.seed);
    equal(new Set(seeds).size, 8, `seed ${seed}: ${seeds}`);
    equal(seeds[0], seed, "choice 0 keeps the request's seed");
    ok(seeds.every((s) => Number.isSafeInteger(s)));
  }
  const at = (seed: number) => job({ prompt: "Hi", seed }).request(0).sampling_options.seed;
  ok(at(2 ** 52) !== at(0), "2^52 is not 0");
  ok(at(-1) !== at(1), "-1 is not 1");
  equal(choiceSeed(Number.MAX_SAFE_INTEGER, 2), Number.MAX_SAFE_INTEGER - 2);
  refused({ seed: 2 ** 53 }, "seed");
});

Deno.test("stop_token_ids reach the engine (hidden unless include_stop_str_in_output)", () => {
  const hidden = job({ prompt: "Hi", stop_token_ids: [65, 66] }).request(0).stop_conditions;
  deepStrictEqual(hidden.stop_token_ids_hidden, [65, 66]);
  const shown = job({ prompt: "Hi", stop_token_ids: [65], include_stop_str_in_output: true })
    .request(0).stop_conditions;
  deepStrictEqual(shown.stop_token_ids, [65]);
  refused({ stop_token_ids: [-1] }, "stop_token_ids");
});

Deno.test("echo carries the prompt as given; min_tokens is kept for the text layer", () => {
  deepStrictEqual(job({ prompt: "Hi there", echo: true }).echo, ["Hi there"]);
  deepStrictEqual(job({ prompt: [72, 105], echo: true }).echo, ["Hi"]);
  deepStrictEqual(job({ prompt: ["Hi", "Yo"], echo: true }).echo, ["Hi", "Yo"]);
  deepStrictEqual(job({ prompt: [[72, 105], [72, 105, 33]], echo: true }).echo, ["Hi", "Hi!"]);
  equal(job({ prompt: "Hi" }).echo, undefined);
  equal(job({ prompt: "Hi", min_tokens: 4, max_tokens: 8 }).minTokens, 4);
});

Deno.test("non-finite numbers are quoted as themselves, not as JSON's null", () => {
  throws(() => job({ prompt: "Hi", temperature: NaN }), /got NaN/);
  throws(() => job({ prompt: "Hi", top_p: Infinity }), /got Infinity/);
});

Deno.test("top_p 0, which would keep no token, is refused here as the engine refuses it", () => {
  refused({ top_p: 0 }, "top_p");
  refused({ top_p: 0 }, "top_p", true);
  ok(job({ prompt: "Hi", top_p: 1e-9 }));
});
