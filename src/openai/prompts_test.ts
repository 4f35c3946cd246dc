/**
 * Completions `prompt` in every form OpenAI takes (a string, strings, token ids, token-id arrays):
 * each prompt's ids, choice `k` running prompt `⌊k / n⌋` with sample `k % n`'s seed, usage's prompt
 * tokens counted once per prompt, and the bounds (empty, too many for `n`, ids out of the
 * vocabulary, mixed forms) refused naming `prompt` or `n`.
 */
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import { specFiles } from "../adapters/deno/file_source.ts";
import { EngineError } from "../contract/errors.ts";
import { loadText } from "../text/load.ts";
import { completionPrompts } from "./prompts.ts";
import { parseJob } from "./requests.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const text = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
const tok = text.tokenizer;
const limits = { maxN: 8, contextLength: 512, maxLogprobs: 20 };
const job = (body: Record<string, unknown>) =>
  parseJob({ model: "fortune", ...body }, false, text, limits);

/** `prompt` (and `n`) refused: `InvalidArgument` naming `param`, its message matching `says`. */
const refused = (body: Record<string, unknown>, param: string, says: RegExp) =>
  throws(() => job(body), (e: unknown) => {
    ok(e instanceof EngineError, String(e));
    strictEqual(e.type, "InvalidArgument");
    strictEqual(e.param, param, e.message);
    ok(says.test(e.message), e.message);
    return true;
  });

Deno.test("every prompt form: a string, strings, token ids, token-id arrays", () => {
  const hi = tok.encode("Hi"), yo = tok.encode("Yo there");
  deepStrictEqual(completionPrompts("Hi", tok, 8), [{ ids: hi, text: "Hi" }]);
  deepStrictEqual(completionPrompts(["Hi", "Yo there"], tok, 8), [
    { ids: hi, text: "Hi" },
    { ids: yo, text: "Yo there" },
  ]);
  deepStrictEqual(completionPrompts([72, 105], tok, 8), [{ ids: [72, 105] }]);
  deepStrictEqual(completionPrompts([[72], [105, 259]], tok, 8), [{ ids: [72] }, {
    ids: [105, 259],
  }]);
  // A single token array is one prompt, however long (the count bounds prompts, not tokens).
  strictEqual(completionPrompts(Array(20).fill(65), tok, 1).length, 1);
});

Deno.test("choice k runs prompt ⌊k / n⌋ with sample k % n's seed; prompt tokens count once", () => {
  const j = job({ prompt: ["Hi", "Yo there", "Z"], n: 2, seed: 7 });
  strictEqual(j.choices, 6);
  strictEqual(j.n, 2);
  const prompts = [tok.encode("Hi"), tok.encode("Yo there"), tok.encode("Z")];
  deepStrictEqual(j.prompts, prompts);
  strictEqual(j.promptTokens, prompts[0]!.length + prompts[1]!.length + prompts[2]!.length);
  for (let k = 0; k < 6; k++) {
    const r = j.request(k);
    deepStrictEqual(r.token_ids, prompts[Math.floor(k / 2)], `choice ${k}`);
    strictEqual(r.sampling_options.seed, 7 + (k % 2), `choice ${k}`);
  }
  // Each prompt's choices are those of the prompt sent alone.
  const alone = job({ prompt: "Yo there", n: 2, seed: 7 });
  deepStrictEqual(j.request(3), alone.request(1));
  // The capacity check tries the longest prompt.
  deepStrictEqual(j.request(j.longest).token_ids, prompts[1]);
});

Deno.test("bounds: empty, mixed, out of the vocabulary, too many for n", () => {
  refused({ prompt: [] }, "prompt", /^prompt: expected a string, .* got \[\]/);
  refused({ prompt: [[]] }, "prompt", /^prompt\[0\]: an empty token array/);
  refused({ prompt: 5 }, "prompt", /^prompt: expected/);
  refused({ prompt: [{ text: "Hi" }] }, "prompt", /^prompt\[0\]: expected a string, a token id/);
  refused({ prompt: ["Hi", [72]] }, "prompt", /^prompt\[1\]: expected a string \(as prompt\[0\]\)/);
  refused({ prompt: [[72], "Hi"] }, "prompt", /^prompt\[1\]: expected an array of token ids/);
  refused({ prompt: [72, "Hi"] }, "prompt", /^prompt\[1\]: expected a token id from 0 to 259/);
  refused({ prompt: [72, 260] }, "prompt", /^prompt\[1\]: expected a token id .* got 260/);
  refused({ prompt: [72, -1] }, "prompt", /^prompt\[1\]: .* got -1/);
  refused({ prompt: [72, 1.5] }, "prompt", /^prompt\[1\]: .* got 1\.5/);
  refused({ prompt: [[72], [105, 9999]] }, "prompt", /^prompt\[1\]\[1\]: .* got 9999/);
  // n times the prompts is bounded by the limit on n: 8 here.
  refused({ prompt: Array(9).fill("Hi") }, "prompt", /^prompt: 9 prompts; at most 8/);
  refused({ prompt: ["a", "b", "c"], n: 3 }, "n", /3 choices for each of 3 prompts is over 8/);
  refused({ prompt: "a", n: 9 }, "n", /^n: at most 8/);
  strictEqual(job({ prompt: ["a", "b"], n: 4 }).choices, 8);
  strictEqual(job({ prompt: Array(8).fill("Hi") }).choices, 8);
});

Deno.test("the context check names the longest prompt; best_of is per prompt", () => {
  const long = "x".repeat(600);
  refused({ prompt: ["Hi", long] }, "prompt", /^prompt\[1\] is 601 tokens; the context is 512/);
  refused(
    { prompt: ["Hi", "x".repeat(500)], max_tokens: 20 },
    "max_tokens",
    /prompt\[1\] is 501 tokens/,
  );
  strictEqual(job({ prompt: ["a", "b"], n: 2, best_of: 2 }).choices, 4);
});
