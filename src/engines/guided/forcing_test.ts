/**
 * Forced stretches (`guidedForcing: "chunk"`) on fortune, whose byte vocabulary makes them long
 * (a schema's fixed keys are forced byte by byte): the output, finish reason and usage equal
 * those of `guidedForcing: "off"` for the same seed, greedy and at temperature 1 (the RNG counter
 * is the output position, so a skipped draw leaves the next one unchanged), in fewer engine
 * steps; free requests beside guided ones stream what they stream alone; `max_tokens` inside a
 * forced run ends it with `length` at exactly that many tokens; the stop token the grammar forces
 * at its end ends the stream as a sampled one does, and stays banned before `min_tokens`.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import {
  bytes,
  collect,
  type Collected,
  fortuneEngine,
  request,
} from "../../../test/support/fortune_engine.ts";
import type { WebGpuEngine } from "../webgpu/engine.ts";

const EOS = 257;
const text = (ids: number[]) => new TextDecoder().decode(Uint8Array.from(ids));

const KEYS = {
  type: "object",
  properties: {
    the_first_property_name: { type: "integer", minimum: 0, maximum: 9 },
    another_rather_long_key: { type: "string", maxLength: 6 },
    is_it_true_or_is_it_false: { type: "boolean" },
  },
  required: ["the_first_property_name", "another_rather_long_key", "is_it_true_or_is_it_false"],
  additionalProperties: false,
};

const guided = (
  seed: number,
  temperature: number,
  stop: Partial<PreprocessedRequest["stop_conditions"]> = {},
): PreprocessedRequest =>
  request(bytes("Your fortune: "), {
    eos_token_ids: [EOS],
    stop_conditions: { max_tokens: 200, ...stop },
    sampling_options: { temperature, seed, guided_decoding: { json: KEYS } },
  });

/** Two engines on the shared device: forcing off and on. */
async function withEngines(f: (off: WebGpuEngine, on: WebGpuEngine) => Promise<void>) {
  const off = await fortuneEngine({ pipelineDepth: 4, guidedForcing: "off" });
  const on = await fortuneEngine({ pipelineDepth: 4 });
  await off.start(0n);
  await on.start(0n);
  try {
    await f(off, on);
  } finally {
    await off.cleanup();
    await on.cleanup();
  }
}

/** Run `reqs` at once; the runs and the steps the engine took. */
async function steps(e: WebGpuEngine, reqs: PreprocessedRequest[]) {
  const before = e.steps.submitted;
  const runs: Collected[] = await Promise.all(reqs.map((r) => collect(e, r)));
  return { runs, steps: e.steps.submitted - before };
}

const same = (a: Collected, b: Collected) => {
  deepStrictEqual(a.ids, b.ids, `${text(a.ids)} vs ${text(b.ids)}`);
  deepStrictEqual(a.last.finish_reason, b.last.finish_reason);
  deepStrictEqual(a.last.completion_usage, b.last.completion_usage);
};

Deno.test("forced runs: same output as sampling every token, greedy and at temperature 1, in fewer steps", async () => {
  await withEngines(async (off, on) => {
    for (const [seed, t] of [[0, 0], [1, 1], [2, 1], [3, 1]] as const) {
      const a = await steps(off, [guided(seed, t)]);
      const forcedBefore = on.steps.forcedTokens;
      const b = await steps(on, [guided(seed, t)]);
      same(a.runs[0]!, b.runs[0]!);
      const out = text(b.runs[0]!.ids);
      equal(b.runs[0]!.last.finish_reason, "eos", out);
      ok(out.startsWith('{"the_first_property_name": '), out);
      JSON.parse(out);
      const forced = on.steps.forcedTokens - forcedBefore;
      // At least the three keys and their quotes, the braces and separators.
      ok(forced >= 70, `${forced} forced in ${out}`);
      equal(off.steps.forcedTokens, 0);
      ok(b.steps < a.steps / 2, `steps: ${b.steps} with forcing, ${a.steps} without`);
    }
  });
});

Deno.test("forced runs beside free requests: the free ones stream what they stream alone", async () => {
  await withEngines(async (off, on) => {
    const free = (i: number) =>
      request(bytes(["You will ", "Luck ", "A friend ", "Soon "][i]!), {
        stop_conditions: { max_tokens: 48 },
      });
    const alone = [];
    for (let i = 0; i < 4; i++) alone.push(await collect(on, free(i)));
    const mixed = (e: WebGpuEngine) =>
      steps(e, [free(0), guided(5, 1), free(1), guided(0, 0), free(2), guided(6, 1), free(3)]);
    const [a, b] = [await mixed(off), await mixed(on)];
    for (let i = 0; i < 4; i++) {
      same(b.runs[2 * i]!, alone[i]!);
      same(a.runs[2 * i]!, alone[i]!);
    }
    for (const i of [1, 3, 5]) same(a.runs[i]!, b.runs[i]!);
    ok(b.steps <= a.steps, `steps: ${b.steps} with forcing, ${a.steps} without`);
  });
});

Deno.test("max_tokens inside a forced run: length, exactly that many tokens; min_tokens keeps EOS banned", async () => {
  await withEngines(async (off, on) => {
    const whole = await collect(off, guided(0, 0));
    const key = text(whole.ids).indexOf("another_rather");
    ok(key > 0);
    for (const max of [1, 5, key + 4]) {
      const [a, b] = [
        await collect(off, guided(0, 0, { max_tokens: max })),
        await collect(on, guided(0, 0, { max_tokens: max })),
      ];
      same(a, b);
      equal(b.last.finish_reason, "length");
      equal(b.ids.length, max);
      deepStrictEqual(b.ids, whole.ids.slice(0, max));
      equal(b.last.completion_usage?.completion_tokens, max);
    }
    // The closing brace forces EOS; before min_tokens EOS is banned: a dead end either way.
    const min = whole.ids.length + 3;
    const [a, b] = [
      await collect(off, guided(0, 0, { min_tokens: min })),
      await collect(on, guided(0, 0, { min_tokens: min })),
    ];
    same(a, b);
    equal(typeof b.last.finish_reason, "object");
  });
});

Deno.test("forced runs preempted and recomputed stream what they stream with room", async () => {
  const reqs = [1, 2, 3, 4, 5].map((s) => guided(s, 1, { max_tokens: 80 }));
  const runAll = async (e: WebGpuEngine) => {
    await e.start(0n);
    try {
      return (await steps(e, reqs)).runs;
    } finally {
      await e.cleanup();
    }
  };
  const roomy = await runAll(await fortuneEngine({ pipelineDepth: 1, guidedForcing: "off" }));
  // 12 blocks of 16 tokens: five sequences growing to ~100 tokens cannot all stay.
  const tight = await fortuneEngine({ pipelineDepth: 4, kvBlocks: 12, maxNumSeqs: 5 });
  const got = await runAll(tight);
  for (let i = 0; i < reqs.length; i++) same(got[i]!, roomy[i]!);
  ok(tight.steps.preemptions > 0, "the small cache forced preemption");
  ok(tight.steps.forcedTokens > 0);
});

Deno.test("guidedForcing other than chunk or off is InvalidArgument naming it", async () => {
  await rejects(
    // deno-lint-ignore no-explicit-any
    async () => await fortuneEngine({ guidedForcing: "sometimes" as any }),
    (e) => e instanceof EngineError && e.type === "InvalidArgument" && e.param === "guidedForcing",
  );
});
