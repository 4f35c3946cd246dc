import { deepStrictEqual, equal, ok, rejects } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { formatReport, runConformanceReport } from "../../conformance/kit.ts";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { WebGpuEngine } from "./engine.ts";
import {
  bytes,
  collect,
  FORTUNE as fortune,
  fortuneEngine as engine,
  request,
} from "../../../test/support/fortune_engine.ts";

Deno.test("WebGpuEngine passes the conformance kit on the fortune model (Deno, lavapipe)", async () => {
  const report = await runConformanceReport(() =>
    new WebGpuEngine({ files: dirFiles(fortune), name: "fortune", kvBlocks: 64 })
  );
  ok(report.passed, formatReport(report));
});

Deno.test("batched and unbatched greedy decoding agree; a prefix-cache hit changes nothing", async () => {
  const e = await engine({ maxNumBatchedTokens: 24 });
  await e.start(0n);
  try {
    const prompts = [bytes("The quick brown fox jumps over"), bytes("Love"), bytes("You will be")];
    const alone = [];
    for (const p of prompts) alone.push((await collect(e, request(p))).ids);
    const together = await Promise.all(prompts.map((p) => collect(e, request(p))));
    deepStrictEqual(together.map((r) => r.ids), alone);
    // The first prompt's full blocks are cached now; running it again must hit and agree.
    const again = await collect(e, request(prompts[0]!));
    deepStrictEqual(again.ids, alone[0]);
    equal(e.usedBlocks, 0);
  } finally {
    await e.cleanup();
  }
});

Deno.test("stop conditions, usage and bad input on the GPU engine", async () => {
  const e = await engine();
  await e.start(0n);
  try {
    const p = bytes("The ");
    const free = await collect(e, request(p, { stop_conditions: { max_tokens: 12 } }));
    equal(free.last.finish_reason, "length");
    deepStrictEqual(free.last.completion_usage, {
      prompt_tokens: p.length,
      completion_tokens: 12,
      total_tokens: p.length + 12,
    });
    const stopAt = free.ids[4]!;
    const shown = await collect(
      e,
      request(p, { stop_conditions: { max_tokens: 12, stop_token_ids: [stopAt] } }),
    );
    deepStrictEqual(shown.ids, free.ids.slice(0, free.ids.indexOf(stopAt) + 1));
    equal(shown.last.finish_reason, "stop");
    const hidden = await collect(
      e,
      request(p, { stop_conditions: { max_tokens: 12, stop_token_ids_hidden: [stopAt] } }),
    );
    deepStrictEqual(hidden.ids, free.ids.slice(0, free.ids.indexOf(stopAt)));
    const eos = await collect(
      e,
      request(p, { eos_token_ids: [stopAt], stop_conditions: { max_tokens: 12 } }),
    );
    equal(eos.last.finish_reason, "eos");
    const zero = await collect(e, request(p, { stop_conditions: { max_tokens: 0 } }));
    equal(zero.chunks.length, 1);
    equal(zero.last.finish_reason, "length");
    const lp = await collect(
      e,
      request(p, { output_options: { logprobs: 3 }, stop_conditions: { max_tokens: 2 } }),
    );
    ok(
      lp.chunks.every((c) =>
        c.token_ids.length === 0 || (c.log_probs?.length === 1 && c.top_logprobs?.[0]?.length === 3)
      ),
    );
    const invalid = (what: string) => (err: unknown) =>
      err instanceof EngineError && err.type === "InvalidArgument" && err.message.includes(what);
    await rejects(collect(e, request([256, 300])), invalid("vocab"));
    await rejects(collect(e, request(new Array(1024).fill(65))), invalid("context"));
    await rejects(
      collect(e, request(p, { sampling_options: { temperature: -1 } })),
      invalid("temperature"),
    );
    // Others keep running after bad input.
    equal((await collect(e, request(p))).last.finish_reason, "length");
  } finally {
    await e.cleanup();
  }
  await rejects(
    collect(e, request([256])),
    (err: unknown) => err instanceof EngineError && err.type === "EngineShutdown",
  );
});
