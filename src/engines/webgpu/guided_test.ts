/**
 * Hand-written token mask providers in WebGpuEngine (`generate`'s third argument), on both
 * bitmask paths: hand-written providers over fortune's byte vocabulary ("only digits", "one of
 * these strings") shape their requests' output while a free greedy request in the same batches
 * streams exactly what it streams alone, with its steps still pipelined; each provider sees
 * every earlier token; a mask that allows nothing ends its request (finish reason `{error}`), a
 * wrong-sized mask or a provider that throws fails it, the others go on; preempted guided sequences stream what they stream with room.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { RequestContext } from "../../contract/engine.ts";
import { EngineError } from "../../contract/errors.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "../../contract/types.ts";
import { freeMask, tokenBitmask } from "../../gpu/token_mask_bits.ts";
import type { TokenMaskPath } from "../../gpu/kernels/token_mask.ts";
import type { TokenMaskProvider } from "../token_mask.ts";
import type { WebGpuEngine } from "./engine.ts";
import { bytes, fortuneEngine, request } from "../../../test/support/fortune_engine.ts";

const VOCAB = 260, EOS = 257;
const DIGITS = [..."0123456789"].map((c) => c.charCodeAt(0));

/** A provider that records the outputs it is asked about. */
class Recorder implements TokenMaskProvider {
  readonly seen: number[][] = [];
  constructor(readonly next: (output: readonly number[]) => Uint32Array) {}
  nextMask(output: readonly number[]): Uint32Array {
    this.seen.push([...output]);
    return this.next(output);
  }
}

const digits = () => new Recorder(() => tokenBitmask(VOCAB, DIGITS));

/** One of `choices` (bytes), then EOS. */
const oneOf = (choices: string[]) =>
  new Recorder((output) => {
    const text = String.fromCharCode(...output);
    if (choices.includes(text)) return tokenBitmask(VOCAB, [EOS]);
    const next = choices.filter((c) => c.startsWith(text) && c.length > text.length);
    return tokenBitmask(VOCAB, next.map((c) => c.charCodeAt(text.length)));
  });

async function run(
  e: WebGpuEngine,
  req: PreprocessedRequest,
  guide?: TokenMaskProvider,
): Promise<{ ids: number[]; last: LLMEngineOutput }> {
  const chunks: LLMEngineOutput[] = [];
  for await (const c of e.generate(req, new RequestContext(), guide)) chunks.push(c);
  return { ids: chunks.flatMap((c) => c.token_ids), last: chunks.at(-1)! };
}

const FREE = request(bytes("You will "), { stop_conditions: { max_tokens: 40 } });
const text = (ids: number[]) => String.fromCharCode(...ids);

for (const path of ["pass", "fused"] as TokenMaskPath[]) {
  Deno.test(`${path}: guided requests share batches with a free one, whose greedy output is unchanged`, async () => {
    const e = await fortuneEngine({ tokenMaskPath: path, pipelineDepth: 4 });
    await e.start(0n);
    try {
      const alone = await run(e, FREE);
      const plain = await run(
        e,
        request(bytes("Your lucky number is "), {
          stop_conditions: { max_tokens: 6 },
        }),
      );
      const steps = e.steps.submitted;
      const d = digits(), greedyChoice = oneOf(["yes", "no", "maybe"]);
      const sampledChoice = oneOf(["yes", "no", "maybe"]);
      const [free, num, choice, drawn] = await Promise.all([
        run(e, FREE),
        run(e, request(bytes("Your lucky number is "), { stop_conditions: { max_tokens: 6 } }), d),
        run(e, request(bytes("Will I be rich? "), { eos_token_ids: [EOS] }), greedyChoice),
        run(
          e,
          request(bytes("Will I be rich? "), {
            eos_token_ids: [EOS],
            sampling_options: { temperature: 1, seed: 11 },
          }),
          sampledChoice,
        ),
      ]);
      deepStrictEqual(free.ids, alone.ids, "the free request streams what it streams alone");
      ok(e.steps.maxInFlight > 1, `free steps pipelined: ${e.steps.maxInFlight} in flight`);
      equal(num.ids.length, 6);
      ok(num.ids.every((t) => DIGITS.includes(t)), text(num.ids));
      ok(!plain.ids.every((t) => DIGITS.includes(t)), "unguided, the model writes no number");
      for (const [r, p] of [[choice, greedyChoice], [drawn, sampledChoice]] as const) {
        ok(["yes", "no", "maybe"].includes(text(r.ids)), text(r.ids));
        equal(r.last.finish_reason, "eos");
        // Asked once per token, with every earlier token known (EOS included as the last step).
        deepStrictEqual(p.seen, [...r.ids.keys(), r.ids.length].map((n) => r.ids.slice(0, n)));
      }
      deepStrictEqual(d.seen, [...num.ids.keys()].map((n) => num.ids.slice(0, n)));
      ok(e.steps.submitted - steps > 0);
    } finally {
      await e.cleanup();
    }
  });
}

Deno.test("a mask that allows nothing ends its request with an error finish; a wrong-sized mask or a provider that throws fails it; the others go on", async () => {
  const e = await fortuneEngine();
  await e.start(0n);
  try {
    const alone = await run(e, FREE);
    const typed = (needle: string) => (err: unknown) =>
      err instanceof EngineError && err.type === "InvalidArgument" && err.message.includes(needle);
    const guided = (guide: TokenMaskProvider) =>
      run(e, request(bytes("Luck "), { stop_conditions: { max_tokens: 8 } }), guide);
    const [free, dead] = await Promise.all([
      run(e, FREE),
      guided(new Recorder((o) => o.length < 2 ? freeMask(VOCAB) : new Uint32Array(9))),
      rejects(guided(new Recorder(() => new Uint32Array(3))), typed("3 words")),
      rejects(
        guided(
          new Recorder(() => {
            throw EngineError.invalidArgument("grammar: boom");
          }),
        ),
        typed("grammar: boom"),
      ),
    ]);
    deepStrictEqual(free.ids, alone.ids);
    // A dead end ends the stream with an error finish reason, after the tokens before it.
    equal(dead.ids.length, 2);
    const reason = dead.last.finish_reason;
    ok(typeof reason === "object" && reason.error.includes("dead end at output position 2"));
    equal(e.stats.failed, 3);
    equal(e.usedBlocks, 0);
  } finally {
    await e.cleanup();
  }
});

Deno.test("guided sequences preempted and recomputed stream what they stream with room", async () => {
  const reqs = ["The ", "You ", "Love ", "Luck ", "A "].map((p) =>
    request(bytes(p), { stop_conditions: { max_tokens: 28 } })
  );
  const runAll = async (e: WebGpuEngine) => {
    await e.start(0n);
    try {
      return await Promise.all(reqs.map((r, i) => run(e, r, i % 2 === 0 ? digits() : undefined)));
    } finally {
      await e.cleanup();
    }
  };
  const roomy = await runAll(await fortuneEngine({ pipelineDepth: 1 }));
  // 6 blocks of 16 tokens: five sequences growing to ~33 tokens cannot all stay.
  const tight = await fortuneEngine({ pipelineDepth: 4, kvBlocks: 6, maxNumSeqs: 5 });
  const got = await runAll(tight);
  deepStrictEqual(got.map((r) => r.ids), roomy.map((r) => r.ids));
  ok(tight.steps.preemptions > 0, "the small cache forced preemption");
  ok(got.filter((_, i) => i % 2 === 0).every((r) => r.ids.every((t) => DIGITS.includes(t))));
});
