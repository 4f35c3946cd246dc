/**
 * WebGpuEngine held to a float64 generation loop over the same model (fortune), not to itself
 * (`test/support/reference_generate.ts`): penalties over output tokens only, EOS exactly at
 * `min_tokens`, logprobs and their top lists at T ≠ 0, top-k / top-p / min-p at T ≠ 1, seeded
 * draws token for token, n seeds of one prompt, all run as one batch of mixed requests. Each
 * planted engine bug (the reference with that bug) is shown rejected by the same check.
 */
import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import type { PreprocessedRequest } from "../../contract/types.ts";
import { choiceSeed } from "../../openai/requests.ts";
import {
  asStreamed,
  type Bound,
  checkStream,
  referenceGenerate,
  type RefMutation,
  type RefResult,
  type Streamed,
  streamed,
} from "../../../test/support/reference_generate.ts";
import { bytes, collect, fortuneEngine, request } from "../../../test/support/fortune_engine.ts";
import { fortuneReference } from "../../../test/support/reference_fortune.ts";

// The GPU's f32 forward pass against the float64 model's: logprobs measured off by up to 2.6e-3
// (T 0.7, where logit errors of ~8e-4 grow by 1/T), 7.7e-4 at T 0.
const BOUND: Bound = { tol: 5e-3, eps: 0 };
/**
 * Each case's draws stand this far from a tie (greedy: the top-2 logit gap; sampled: the uniform's
 * distance to a CDF edge, which the GPU's error moves by at most its largest logprob error): about
 * twice the measured error; closer, another GPU path could rightly draw otherwise.
 */
const MARGIN = 5e-3;
const wellPosed = (r: RefResult, what: string) =>
  r.steps.forEach((s, i) =>
    ok(s.margin >= MARGIN, `${what} #${i}: too close to call (${s.margin})`)
  );
const LA = bytes("la la la la la la la"), WILL = bytes("You will ");
const EOS = 257, SPACE = 32;

interface Case {
  name: string;
  req: PreprocessedRequest;
  /** The planted bug this case must expose. */
  mutant?: RefMutation;
}

const greedy = (prompt: number[], s: PreprocessedRequest["sampling_options"], max = 8) =>
  request(prompt, {
    eos_token_ids: [EOS],
    stop_conditions: { max_tokens: max },
    sampling_options: { temperature: 0, ...s },
  });
const sampled = (s: PreprocessedRequest["sampling_options"], logprobs = 5) =>
  request(WILL, {
    eos_token_ids: [EOS],
    stop_conditions: { max_tokens: 6 },
    sampling_options: s,
    output_options: { logprobs },
  });
const minTokens = (prompt: number[], min: number) =>
  request(prompt, {
    eos_token_ids: [SPACE, EOS], // a space is the greedy choice at once
    stop_conditions: { max_tokens: 8, min_tokens: min },
    sampling_options: { temperature: 0 },
  });

const CASES: Case[] = [
  // The prompt ends in tokens the model repeats: counting them changes the greedy tokens.
  {
    name: "presence",
    req: greedy(LA, { presence_penalty: 1.5 }),
    mutant: "penalties-count-prompt",
  },
  {
    name: "frequency",
    req: greedy(LA, { frequency_penalty: 0.8 }),
    mutant: "penalties-count-prompt",
  },
  { name: "repetition (prompt and output)", req: greedy(LA, { repetition_penalty: 1.5 }) },
  { name: "min_tokens 2", req: minTokens(LA, 2), mutant: "min-tokens-one-too-long" },
  { name: "min_tokens 4", req: minTokens(LA, 4), mutant: "min-tokens-one-too-long" },
  {
    name: "min_tokens 2, other prompt",
    req: minTokens(WILL, 2),
    mutant: "min-tokens-one-too-long",
  },
  { name: "T 0 logprobs", req: sampled({ temperature: 0 }) },
  { name: "T 0.7", req: sampled({ temperature: 0.7, seed: 12 }), mutant: "logprobs-untempered" },
  { name: "T 0.7 top_k 5", req: sampled({ temperature: 0.7, top_k: 5, seed: 12 }) },
  { name: "T 1.5 top_p 0.8", req: sampled({ temperature: 1.5, top_p: 0.8, seed: 14 }) },
  {
    name: "T 2 min_p 0.1",
    req: sampled({ temperature: 2, min_p: 0.1, seed: 3 }),
    mutant: "min-p-before-temperature",
  },
  {
    name: "T 0.5 min_p 0.1",
    req: sampled({ temperature: 0.5, min_p: 0.1, seed: 2 }),
    mutant: "min-p-before-temperature",
  },
  // n = 4 as the OpenAI layer asks for it: one prompt, choice k's seed `choiceSeed(seed, k)`.
  ...[0, 1, 2, 3].map((k) => ({
    name: `n 4 choice ${k}`,
    req: sampled({ temperature: 1, seed: choiceSeed(1068, k), presence_penalty: 0.5 }, 2),
  })),
];

interface Outcome {
  got: Streamed;
  ref: RefResult;
  alone?: Streamed;
}

let outcomes: Promise<Map<string, Outcome>> | undefined;

/** Every case in one batch on one engine, the seeded ones again one by one; their references. */
function runAll(): Promise<Map<string, Outcome>> {
  return outcomes ??= (async () => {
    const model = await fortuneReference();
    const e = await fortuneEngine({ maxNumSeqs: CASES.length });
    await e.start(0n);
    try {
      const batch = await Promise.all(CASES.map((c) => collect(e, c.req)));
      const out = new Map<string, Outcome>();
      for (const [i, c] of CASES.entries()) {
        const o: Outcome = {
          got: streamed(batch[i]!.chunks),
          ref: referenceGenerate(model, c.req),
        };
        if (c.req.sampling_options.seed !== undefined) {
          o.alone = streamed((await collect(e, c.req)).chunks);
        }
        out.set(c.name, o);
      }
      return out;
    } finally {
      await e.cleanup();
    }
  })();
}

/** The cases named: each equals its reference; its planted bug is rejected by the check. */
async function holds(...names: string[]): Promise<void> {
  const all = await runAll();
  const model = await fortuneReference();
  const cases = names.map((n) => CASES.find((c) => c.name === n)!);
  ok(cases.every((c) => c !== undefined), `${names}`);
  for (const c of cases) {
    const { got, ref } = all.get(c.name)!;
    checkStream(got, ref, BOUND, c.name);
    wellPosed(ref, c.name);
    if (c.mutant === undefined) continue;
    const bad = referenceGenerate(model, c.req, { mutation: c.mutant });
    throws(() => checkStream(got, bad, BOUND, c.name), `${c.name}: ${c.mutant} passes the check`);
    const lp = c.req.output_options.logprobs !== undefined;
    throws(
      () => checkStream(asStreamed(bad, lp), ref, BOUND, c.name),
      `${c.name}: ${c.mutant}'s stream passes`,
    );
  }
}

Deno.test("penalties over output tokens only; planted: penalties counting prompt tokens", async () => {
  await holds("presence", "frequency", "repetition (prompt and output)");
});

Deno.test("EOS exactly at min_tokens; planted: min_tokens one too long", async () => {
  const names = CASES.map((c) => c.name).filter((n) => n.startsWith("min_tokens"));
  await holds(...names);
  for (const c of CASES.filter((c) => names.includes(c.name))) {
    const { got } = (await runAll()).get(c.name)!;
    equal(got.ids.length, c.req.stop_conditions.min_tokens, `${c.name}: exactly min_tokens`);
    equal(got.finish, "eos", c.name);
  }
});

Deno.test("logprobs and top lists at T 0 and T 0.7; planted: logprobs of the untempered distribution", async () => {
  await holds("T 0 logprobs", "T 0.7", "T 0.7 top_k 5");
});

Deno.test("top-k, top-p, min-p at T ≠ 1; planted: min-p applied before temperature", async () => {
  await holds("T 0.7 top_k 5", "T 1.5 top_p 0.8", "T 2 min_p 0.1", "T 0.5 min_p 0.1");
});

Deno.test("seeds: the reference's draws token for token, alone or batched; n seeds of one prompt", async () => {
  await holds(...[0, 1, 2, 3].map((k) => `n 4 choice ${k}`));
  const all = await runAll();
  for (const c of CASES.filter((c) => c.req.sampling_options.seed !== undefined)) {
    const o = all.get(c.name)!;
    checkStream(o.alone!, o.ref, BOUND, `${c.name} alone`);
  }
  const choices = [0, 1, 2, 3].map((k) => all.get(`n 4 choice ${k}`)!.got.ids.join());
  ok(new Set(choices).size > 1, "four seeds drew four times the same tokens");
});

Deno.test("the reference loop at T 0 draws ReferenceModel.greedy's tokens (its incremental session)", async () => {
  const model = await fortuneReference();
  for (const prompt of [LA, WILL]) {
    const ref = referenceGenerate(model, greedy(prompt, {}, 12));
    deepStrictEqual(ref.tokens, model.greedy(prompt, 12).tokens);
    equal(ref.finish, "length");
  }
});
