/**
 * Whether a grammar's compile stalls other streams: a free greedy stream's inter-token gaps on
 * fortune, alone and while `--compiles` `choice` constraints of `--strings` strings each are
 * compiled (XGrammar, in the grammar worker since issue 37; on the engine's thread before), the
 * two taking turns for `--rounds` rounds. Prints JSON: each round's gaps (median, 90th
 * percentile, largest, in ms) and how many compiles finished while the stream ran.
 *
 *   deno run -A bench/engine/guided_stall.ts [--compiles 8] [--strings 60000] [--tokens 150]
 */
import { runCli } from "../../src/adapters/deno/flags.ts";
import { fortuneEngine } from "../../test/support/fortune_engine.ts";
import { freeGaps } from "../../test/support/hostile_guides.ts";

const { flags } = runCli({
  name: "guided_stall",
  command: "deno run -A bench/engine/guided_stall.ts",
  about: "A free stream's inter-token gaps on fortune, alone and beside large `choice` " +
    "compiles; prints JSON.",
  flags: {
    compiles: { type: "integer", min: 1, default: 8, help: "choice compiles sent at once" },
    strings: { type: "integer", min: 1, default: 60_000, help: "strings per choice" },
    tokens: { type: "integer", min: 10, default: 150, help: "tokens of the free stream" },
    rounds: { type: "integer", min: 1, default: 2, help: "rounds of each" },
  },
});

const rounds = [];
for (let r = 0; r < flags.rounds; r++) {
  for (const compiles of [0, flags.compiles]) {
    // A fresh engine each time: the compiles of one round do not run on into the next.
    const e = await fortuneEngine({ pipelineDepth: 4 });
    await e.start(0n);
    try {
      const t0 = performance.now();
      const run = await freeGaps(e, { tokens: flags.tokens, compiles, strings: flags.strings });
      rounds.push({ compiles, ms: Math.round(performance.now() - t0), ...run });
    } finally {
      await e.cleanup();
    }
  }
}
console.log(JSON.stringify({ strings: flags.strings, tokens: flags.tokens, rounds }, null, 2));
