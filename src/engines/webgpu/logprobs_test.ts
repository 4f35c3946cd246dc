/**
 * Logprobs in WebGpuEngine on fortune (a byte vocabulary), both bitmask paths: a guided request
 * whose grammar allows one token reports that token alone (logprob 0), and fewer alternatives
 * than asked for wherever fewer tokens are allowed, never a padding entry; guided decoding,
 * `allowed_token_ids`, `bad_words_token_ids` and `top_k` report by one rule, the float64
 * reference's (`referenceLogprobs`) over the float64 model's logits.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "../../contract/types.ts";
import { openCheckpoint } from "../../model/checkpoint.ts";
import { ReferenceModel } from "../../reference/model.ts";
import {
  referenceDistribution,
  referenceDraw,
  referenceLogprobs,
  rngUniform,
  type SamplingParams,
} from "../../reference/kernels/sampling.ts";
import type { TokenMaskPath } from "../../gpu/kernels/token_mask.ts";
import {
  bytes,
  collect,
  FORTUNE,
  fortuneEngine,
  request,
} from "../../../test/support/fortune_engine.ts";
import { assertReported } from "../../../test/support/logprobs.ts";

const EOS = 257, VOCAB = 260;
const PROMPT = bytes("Your lucky number is ");
const DIGITS = [..."123"].map((c) => c.charCodeAt(0));
// The GPU's forward pass (f32) against the float64 model's: logprobs agree this closely.
const BOUND = { tol: 1e-3, eps: 0 };

/** A request for `max_tokens` tokens after PROMPT with `logprobs` alternatives. */
function asking(
  sampling: PreprocessedRequest["sampling_options"],
  logprobs: number,
  max_tokens = 1,
): PreprocessedRequest {
  return request(PROMPT, {
    eos_token_ids: [EOS],
    stop_conditions: { max_tokens },
    sampling_options: sampling,
    output_options: { logprobs },
  });
}

/** Each generated token's chunk: its id, logprob and alternatives. */
function reported(chunks: LLMEngineOutput[]) {
  return chunks.flatMap((c) =>
    c.token_ids.map((token, k) => ({
      token,
      logprob: c.log_probs![k]!,
      top: c.top_logprobs![k]!,
    }))
  );
}

for (const path of ["pass", "fused"] as TokenMaskPath[]) {
  Deno.test(`${path}: a grammar allowing one token reports it alone; fewer allowed, fewer alternatives`, async () => {
    const e = await fortuneEngine({ tokenMaskPath: path });
    await e.start(0n);
    try {
      // "7", then one digit of ten, then EOS: one allowed token, then ten, then one.
      for (const temperature of [0, 1]) {
        const r = await collect(
          e,
          asking({ temperature, seed: 5, guided_decoding: { regex: "7[0-9]" } }, 5, 8),
        );
        const steps = reported(r.chunks);
        equal(r.last.finish_reason, "eos");
        equal(steps.length, 2, "'7' and a digit (EOS is not streamed)");
        const [seven, digit] = steps;
        equal(seven!.token, "7".charCodeAt(0));
        equal(seven!.top.length, 1, `T ${temperature}: one alternative, the one allowed token`);
        equal(seven!.top[0]!.token_id, seven!.token);
        ok(Math.abs(seven!.logprob) < 1e-6 && Math.abs(seven!.top[0]!.logprob) < 1e-6);
        equal(digit!.top.length, 5, "ten digits allowed, five asked for");
        for (const t of digit!.top) {
          ok(t.token_id >= 48 && t.token_id <= 57, `alternative ${t.token_id} is a digit`);
          ok(t.logprob > -30, `alternative logprob ${t.logprob}`);
        }
        equal(new Set(digit!.top.map((t) => t.token_id)).size, 5, "no duplicates");
        const mass = digit!.top.reduce((a, t) => a + Math.exp(t.logprob), 0);
        ok(mass <= 1 + 1e-5, `the alternatives' mass ${mass}`);
      }
    } finally {
      await e.cleanup();
    }
  });
}

Deno.test("guided, allowed_token_ids, bad words and top_k report logprobs by one rule: the float64 reference's", async () => {
  const checkpoint = await openCheckpoint(dirFiles(FORTUNE));
  const model = await ReferenceModel.load(checkpoint.config, checkpoint.weights);
  const logits = model.logits(PROMPT).at(-1)!;
  const history = { tokens: PROMPT, outputStart: PROMPT.length };
  const byLogit = [...logits.keys()].sort((a, b) => logits[b]! - logits[a]!);
  const others = [...Array(VOCAB).keys()].filter((t) => !DIGITS.includes(t));
  const cases: {
    name: string;
    sampling: PreprocessedRequest["sampling_options"];
    ref: SamplingParams;
  }[] = [];
  for (const temperature of [0, 0.8]) {
    const base = { temperature, seed: 17 };
    const ref = { temperature, allowed: DIGITS };
    cases.push(
      {
        name: `T ${temperature} guided`,
        sampling: { ...base, guided_decoding: { regex: "[123]" } },
        ref,
      },
      { name: `T ${temperature} allowed`, sampling: { ...base, allowed_token_ids: DIGITS }, ref },
      {
        name: `T ${temperature} bad words`,
        sampling: { ...base, bad_words_token_ids: others.map((t) => [t]) },
        ref,
      },
    );
  }
  const topK = { temperature: 0.8, top_k: 4 };
  cases.push(
    {
      name: "top_k 4",
      sampling: { temperature: 0.8, seed: 17, top_k: 4 },
      ref: topK,
    },
    {
      name: "top_k 4 as allowed",
      sampling: { temperature: 0.8, seed: 17, allowed_token_ids: byLogit.slice(0, 4) },
      ref: topK,
    },
  );
  const e = await fortuneEngine();
  await e.start(0n);
  try {
    const seen = new Map<SamplingParams, ReturnType<typeof reported>[number]>();
    for (const c of cases) {
      const [got] = reported((await collect(e, asking(c.sampling, 6))).chunks);
      // The same tokens allowed by another mask: the same report, bit for bit.
      if (seen.has(c.ref)) deepStrictEqual(got, seen.get(c.ref), `${c.name}: as the first`);
      seen.set(c.ref, got!);
      const lp = referenceLogprobs(logits, c.ref, history);
      const u = rngUniform(17, 0, 0);
      equal(got!.token, referenceDraw(referenceDistribution(logits, c.ref, history), u), c.name);
      assertReported(
        {
          token: got!.token,
          logprob: got!.logprob,
          ids: got!.top.map((t) => t.token_id),
          logprobs: got!.top.map((t) => t.logprob),
        },
        lp,
        6,
        c.name,
        BOUND,
      );
    }
  } finally {
    await e.cleanup();
  }
});
