/**
 * WebGpuEngine with speculation (prompt lookup, a draft model) and guided decoding held to the
 * float64 generation loop (`test/support/reference_generate.ts`), not to the engine without
 * them: a batch of mixed requests (penalties, `min_tokens`, seeded draws with logprobs, min-p,
 * a guide's mask) each equals its own reference on each engine; stop strings cut the streamed
 * text, in chunks of several tokens, where they cut the reference's text.
 */
import { ok, strictEqual as equal, throws } from "node:assert/strict";
import { RequestContext } from "../../contract/engine.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "../../contract/types.ts";
import { validateStream } from "../../contract/validate.ts";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { tokenBitmask } from "../../gpu/token_mask_bits.ts";
import { StopStrings } from "../../text/stop_strings.ts";
import type { SpeculativeOptions } from "../speculation.ts";
import type { TokenMaskProvider } from "../token_mask.ts";
import type { WebGpuEngine } from "./engine.ts";
import {
  asStreamed,
  type Bound,
  checkStream,
  referenceGenerate,
  type RefMutation,
  streamed,
} from "../../../test/support/reference_generate.ts";
import { bytes, FORTUNE, fortuneEngine, request } from "../../../test/support/fortune_engine.ts";
import { fortuneReference } from "../../../test/support/reference_fortune.ts";

// As in engine_reference_test.ts: logprobs measured off by up to 2.6e-3 at T 0.7.
const BOUND: Bound = { tol: 5e-3, eps: 0 };
const VOCAB = 260, EOS = 257, SPACE = 32;
const DIGITS = [..."0123456789"].map((c) => c.charCodeAt(0));
const LA = bytes("la la la la la la la"), WILL = bytes("You will ");

/** Digits and spaces, then EOS: a guide written here, read alike by engine and reference. */
const DIGITS_OR_SPACE = [...DIGITS, SPACE, EOS];
const guide = (): TokenMaskProvider => ({ nextMask: () => tokenBitmask(VOCAB, DIGITS_OR_SPACE) });

interface Case {
  name: string;
  req: PreprocessedRequest;
  guided?: boolean;
  mutant?: RefMutation;
}

const CASES: Case[] = [
  {
    name: "presence",
    req: request(LA, {
      eos_token_ids: [EOS],
      stop_conditions: { max_tokens: 8 },
      sampling_options: { temperature: 0, presence_penalty: 1.5 },
    }),
    mutant: "penalties-count-prompt",
  },
  {
    name: "min_tokens 4",
    req: request(LA, {
      eos_token_ids: [SPACE, EOS],
      stop_conditions: { max_tokens: 8, min_tokens: 4 },
      sampling_options: { temperature: 0 },
    }),
    mutant: "min-tokens-one-too-long",
  },
  {
    name: "T 0.7 logprobs",
    req: request(LA, {
      eos_token_ids: [EOS],
      stop_conditions: { max_tokens: 8 },
      sampling_options: { temperature: 0.7, seed: 22 },
      output_options: { logprobs: 3 },
    }),
    mutant: "logprobs-untempered",
  },
  {
    name: "T 2 min_p",
    req: request(WILL, {
      eos_token_ids: [EOS],
      stop_conditions: { max_tokens: 6 },
      sampling_options: { temperature: 2, min_p: 0.1, seed: 3 },
      output_options: { logprobs: 3 },
    }),
    mutant: "min-p-before-temperature",
  },
  {
    name: "guided T 0.8",
    req: request(bytes("Your lucky number is "), {
      eos_token_ids: [EOS],
      stop_conditions: { max_tokens: 8 },
      sampling_options: { temperature: 0.8, seed: 11 },
    }),
    guided: true,
  },
  { name: "stop strings", req: request(LA, { stop_conditions: { max_tokens: 24 } }) },
  {
    name: "guided greedy",
    req: request(bytes("Your lucky number is "), {
      eos_token_ids: [EOS],
      stop_conditions: { max_tokens: 8 },
    }),
    guided: true,
  },
];

async function chunksOf(
  e: WebGpuEngine,
  req: PreprocessedRequest,
  g?: TokenMaskProvider,
): Promise<LLMEngineOutput[]> {
  const out: LLMEngineOutput[] = [];
  const stream = validateStream(e.generate(req, new RequestContext(), g), {
    promptTokens: req.token_ids.length,
  });
  for await (const c of stream) out.push(c);
  return out;
}

/**
 * Stop strings over the streamed chunks (one token each) cut the text where they first occur in
 * the reference's (`text`, which the caller has held equal), each spanning several chunks.
 */
function stopStrings(chunks: LLMEngineOutput[], text: string): void {
  for (const stop of ["a l", "la la", "a la la l"]) {
    const at = text.indexOf(stop);
    ok(at > 0, `the reference's text holds ${stop}`);
    const cut = new StopStrings([stop]);
    let shown = "", edges = 0, seen = 0;
    for (const c of chunks) {
      seen += c.token_ids.length;
      if (seen > at && seen < at + stop.length) edges++;
      shown += cut.push(String.fromCharCode(...c.token_ids));
      if (cut.stopped !== undefined) break;
    }
    shown += cut.flush();
    equal(shown, text.slice(0, at), `stop ${JSON.stringify(stop)}`);
    equal(cut.stopped, stop);
    ok(edges > 0, `stop ${JSON.stringify(stop)} lies inside one chunk`);
  }
}

/** Every case at once on an engine with `speculative`, each held to its reference. */
async function batchHolds(speculative?: SpeculativeOptions): Promise<void> {
  const model = await fortuneReference();
  const e = await fortuneEngine({
    maxNumSeqs: CASES.length,
    ...(speculative ? { speculative } : {}),
  });
  await e.start(0n);
  try {
    const got = await Promise.all(
      CASES.map((c) => chunksOf(e, c.req, c.guided ? guide() : undefined)),
    );
    for (const [i, c] of CASES.entries()) {
      const g = c.guided ? { guide: () => DIGITS_OR_SPACE } : {};
      const s = streamed(got[i]!);
      const r = referenceGenerate(model, c.req, g);
      checkStream(s, r, BOUND, c.name);
      // Well posed, as in engine_reference_test.ts: no draw within 5e-3 of a tie.
      r.steps.forEach((st, k) => ok(st.margin >= 5e-3, `${c.name} #${k}: too close to call`));
      if (c.name === "stop strings") stopStrings(got[i]!, String.fromCharCode(...s.ids));
      if (c.guided) ok(s.ids.every((t) => DIGITS_OR_SPACE.includes(t)), `${c.name}: guided`);
      if (c.mutant === undefined) continue;
      const bad = referenceGenerate(model, c.req, { ...g, mutation: c.mutant });
      throws(() => checkStream(s, bad, BOUND, c.name), `${c.name}: ${c.mutant} passes`);
      const lp = c.req.output_options.logprobs !== undefined;
      throws(
        () => checkStream(asStreamed(bad, lp), r, BOUND, c.name),
        `${c.name}: its stream passes`,
      );
    }
    if (speculative) ok(e.speculation.numAcceptedTokens > 0, "no draft was accepted");
  } finally {
    await e.cleanup();
  }
}

Deno.test("a mixed batch with guided decoding, no speculation: each its own reference", async () => {
  await batchHolds();
});

Deno.test("a mixed batch with prompt-lookup speculation: each its own reference", async () => {
  await batchHolds({ method: "ngram", numSpeculativeTokens: 3, promptLookupMin: 1 });
});

Deno.test("a mixed batch with a draft model (fortune itself): each its own reference", async () => {
  await batchHolds({ method: "draft_model", model: dirFiles(FORTUNE), numSpeculativeTokens: 3 });
});
