/**
 * `bench --contexts`: on fortune (lavapipe, a 1024-token context), each context's prompt is run
 * (capped where the model's context ends, and said so), its tokens timed, and the ratio taken to
 * the shortest context.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { testGpu } from "../../test/support/gpu.ts";
import { FORTUNE } from "../../test/support/fortune_engine.ts";
import { contextBench, contextPositions, contextPrompt } from "./contexts.ts";
import { KilnRunner, prompt } from "./kiln_runner.ts";

Deno.test("contextPrompt and contextPositions leave room for the decoded tokens", () => {
  equal(contextPrompt(128, 16, 1024), 128);
  equal(contextPrompt(5000, 16, 1024), 1007);
  equal(contextPositions({ contexts: [128, 5000], tokens: 16, maxContext: 1024 }), 1024);
  equal(contextPositions({ contexts: [100], tokens: 4, maxContext: 1024 }), 112);
});

Deno.test("contextBench: decode at each context of fortune, the last one capped", async () => {
  const gpu = await testGpu();
  const o = { contexts: [600, 5000, 8], tokens: 4, maxContext: 1024 };
  const kiln = new KilnRunner({ gpu, kvPositions: contextPositions(o), maxNumSeqs: 1 });
  await kiln.setup(FORTUNE);
  try {
    let salt = 1;
    const lines: string[] = [];
    const { results, skipped } = await contextBench(kiln, {
      ...o,
      prompt: (n) => prompt(n, 256, salt++),
      log: (l) => lines.push(l),
    });
    deepStrictEqual(results.map((r) => r.context), [8, 600, 5000]);
    deepStrictEqual(results.map((r) => r.prompt_tokens), [8, 600, 1019]);
    equal(results[0]!.ratio_to_shortest, 1);
    for (const r of results) {
      equal(r.timed_tokens, 3);
      ok(r.tokens_per_s > 0 && r.seconds > 0 && r.ttft_s > 0, JSON.stringify(r));
      ok(Math.abs(r.ratio_to_shortest - r.tokens_per_s / results[0]!.tokens_per_s) < 1e-9);
    }
    equal(skipped.length, 1);
    ok(/context 5000: the model's context is 1024; ran a 1019-token prompt/.test(skipped[0]!));
    equal(lines.length, 3);
    await rejects(contextBench(kiln, { ...o, tokens: 1, prompt: () => [1], log: () => {} }));
  } finally {
    await kiln.close();
  }
});
