/**
 * The draft model's drafter over engines that answer as told (the GPU engine's drafts are
 * checked in `webgpu/draft_model_test.ts`): a sequence waits while its draft is made, is woken
 * when it is ready, takes it only for the tokens it was made for, and backs off on failures and
 * on drafts whose wait did not pay.
 */
import { deepStrictEqual, strictEqual as equal } from "node:assert/strict";
import type { GenerateContext, LLMEngine } from "../contract/engine.ts";
import { RequestContext } from "../contract/engine.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "../contract/types.ts";
import { modelDrafter } from "./draft_model.ts";
import { Sequence } from "./sequence.ts";

/** An engine whose `generate` continues a prompt with `next(prompt, i)`, or fails. */
function engine(next: (prompt: number[], i: number) => number, fail = false): LLMEngine & {
  asked: PreprocessedRequest[];
} {
  const asked: PreprocessedRequest[] = [];
  return {
    asked,
    start: () => Promise.reject(new Error("unused")),
    async *generate(req: PreprocessedRequest, _ctx: GenerateContext) {
      asked.push(req);
      await Promise.resolve();
      if (fail) throw new Error("the draft engine stopped");
      const ids = Array.from(
        { length: req.stop_conditions.max_tokens! },
        (_, i) => next(req.token_ids, i),
      );
      yield { token_ids: ids } as LLMEngineOutput;
      yield { token_ids: [], finish_reason: "length" } as LLMEngineOutput;
    },
    abort: () => Promise.resolve(),
    drain: () => Promise.resolve(),
    cleanup: () => Promise.resolve(),
    kvEventSources: () => Promise.resolve([]),
    setupMetrics: () => Promise.resolve({ dp_ranks: [0] }),
  } as unknown as LLMEngine & { asked: PreprocessedRequest[] };
}

const sequence = (tokens: number[]) =>
  new Sequence(
    {
      model: "m",
      token_ids: tokens,
      stop_conditions: { max_tokens: 100 },
      sampling_options: {},
      output_options: {},
      eos_token_ids: [],
      annotations: [],
    },
    new RequestContext(),
    1000,
  );

/** Resolve pending promise callbacks (the drafts settle within a few turns). */
const settle = () => new Promise((r) => setTimeout(r, 0));

Deno.test("a sequence waits for its draft, is woken, and takes it for the tokens it was made for", async () => {
  const e = engine((p, i) => p.at(-1)! + 1 + i);
  let wakes = 0;
  const d = modelDrafter(3, { engine: e, vocabSize: 100, context: 64 }, {
    wake: () => wakes++,
    stepMs: () => 10,
  });
  const seq = sequence([1, 2, 3]);
  equal(d.speculates(seq), true);
  equal(d.propose(seq, 8), undefined, "being made: wait");
  equal(d.propose(seq, 8), undefined, "still being made: no second request");
  await settle();
  equal(wakes, 1);
  equal(e.asked.length, 1);
  deepStrictEqual(e.asked[0]!.token_ids, [1, 2, 3]);
  deepStrictEqual(e.asked[0]!.stop_conditions, { max_tokens: 3, ignore_eos: true });
  deepStrictEqual(e.asked[0]!.sampling_options, { temperature: 0 }, "greedy drafts");
  deepStrictEqual(d.propose(seq, 2), [4, 5], "at most what the step has room for");
  // The next draft follows the tokens the sequence has then.
  seq.accept(4, -1);
  equal(d.propose(seq, 8), undefined);
  await settle();
  deepStrictEqual(d.propose(seq, 8), [5, 6, 7]);
  equal(e.asked.length, 2);
});

Deno.test("no draft past the draft model's vocabulary or context; a failed draft is a miss", async () => {
  let wakes = 0;
  const hooks = { wake: () => wakes++, stepMs: () => undefined };
  const ok = engine(() => 1);
  const d = modelDrafter(4, { engine: ok, vocabSize: 50, context: 8 }, hooks);
  const big = sequence([1, 60, 2]);
  deepStrictEqual(d.propose(big, 4), [], "token 60 is past the draft's vocabulary");
  equal(d.speculates(big), false, "and it backs off");
  deepStrictEqual(d.propose(sequence([1, 2, 3, 4, 5]), 4), [], "5 + 4 tokens pass its context");
  equal(ok.asked.length, 0);
  const failing = modelDrafter(
    4,
    { engine: engine(() => 1, true), vocabSize: 50, context: 99 },
    hooks,
  );
  const seq = sequence([1, 2, 3]);
  equal(failing.propose(seq, 4), undefined);
  await settle();
  equal(wakes, 1, "woken on failure too");
  deepStrictEqual(failing.propose(seq, 4), [], "no draft: it decodes plainly");
  equal(failing.speculates(seq), false, "and backs off");
  seq.generated++;
  equal(failing.speculates(seq), true);
});

/**
 * A draft engine that answers when the test says so, on a clock the test moves: `finish(ms)`
 * moves the clock by `ms` and lets the pending draft through, then resolves once the drafter
 * has woken the step loop (the draft is ready). No timer: the wait is exactly `ms`.
 */
function gatedDrafts() {
  let clock = 0;
  let open: (() => void) | undefined;
  let woken: (() => void) | undefined;
  const e: LLMEngine = engine(() => 1);
  const gen = e.generate.bind(e);
  e.generate = (req, ctx) =>
    (async function* () {
      await new Promise<void>((r) => (open = r));
      yield* gen(req, ctx);
    })();
  const hooks = { wake: () => woken?.(), stepMs: () => 10, now: () => clock };
  const finish = async (ms: number) => {
    const ready = new Promise<void>((r) => (woken = r));
    clock += ms;
    equal(typeof open, "function", "a draft is pending");
    open!();
    open = undefined;
    await ready;
  };
  return { e, hooks, finish };
}

Deno.test("a draft's wait counts in what it must repay", async () => {
  // 10 ms steps (the hook): a draft that took 30 ms cost 3 steps of waiting, 90 ms 9 steps.
  const { e, hooks, finish } = gatedDrafts();
  const d = modelDrafter(8, { engine: e, vocabSize: 50, context: 99 }, hooks);
  const seq = sequence([1, 2, 3]);
  const round = async (ms: number, accepted: number) => {
    equal(d.propose(seq, 8), undefined, "being made");
    await finish(ms);
    deepStrictEqual(d.propose(seq, 8), Array(8).fill(1));
    d.verified(seq, 8, accepted, 0);
    const pays = d.speculates(seq);
    seq.generated++;
    return pays;
  };
  equal(
    await round(30, 2),
    false,
    "2 accepted after a wait of 3 steps: a miss",
  );
  equal(d.speculates(seq), true, "due again after one token");
  equal(await round(30, 3), true, "3 accepted after 3 steps repays it");
  equal(await round(30, 8), true, "8 accepted after 3 steps repays it");
  equal(
    await round(90, 8),
    false,
    "8 accepted after a wait of 9 steps does not",
  );
});
