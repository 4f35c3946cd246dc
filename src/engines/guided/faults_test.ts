/**
 * Hostile constraints cannot reach another request or the engine: XGrammar runs in a grammar
 * worker whose instance is replaced after each call that fails in it, and whose worker is
 * terminated when a call runs past its time budget; the refused constraint gets
 * `InvalidArgument` naming its option, the matchers that shared the instance are rebuilt and
 * carry on, a refusal is remembered. On fortune (WebGpuEngine, and `WorkerEngine` with the
 * grammar worker nested in the engine's Deno Worker), and on `Guides` alone (in the worker and on
 * the engine's thread). Before the grammar worker, the same runs failed: valid requests were
 * refused with `RuntimeError: memory access out of bounds` after a few dozen refusals, the same
 * refused schema twice hung, a 100,000-string `choice` compiled for seconds on the engine's
 * thread.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { WorkerEngine } from "../../worker/client.ts";
import { loadText } from "../../text/load.ts";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { FORTUNE, fortuneEngine } from "../../../test/support/fortune_engine.ts";
import {
  assertRefusal,
  freeGaps,
  hostileRequest,
  hostileRun,
  refused,
  runBounded,
  text,
  VALID,
} from "../../../test/support/hostile_guides.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import { RequestContext } from "../../contract/engine.ts";
import { Guides, vocabulary } from "./guides.ts";
import { GrammarClient } from "./grammar_client.ts";
import { GrammarHost } from "./grammar_host.ts";
import { type XGrammarMaker, xgrammarMaker } from "./xgrammar.ts";
import { PROBE } from "./grammar_protocol.ts";
import { allows } from "../../gpu/token_mask_bits.ts";

const tokenizer = (await loadText(dirFiles(FORTUNE))).tokenizer;
const VOCAB = 260;

Deno.test("1,000 refused constraints among valid and free requests: all refused by name, the others untouched", async () => {
  const e = await fortuneEngine({ pipelineDepth: 4 });
  await e.start(0n);
  try {
    const r = await hostileRun(e, { refusedTotal: 1000, perWave: 100 });
    console.log(
      `${r.refused} refused, ${r.valid} valid, ${r.free} free in ${(r.ms / 1000).toFixed(1)} s`,
    );
    equal(r.refused, 1000);
    equal(r.valid, 20);
    equal(e.stats.failed, 0, "no admitted request failed");
  } finally {
    await e.cleanup();
  }
});

Deno.test("the same refused constraint 100 times is refused each time at once, and the engine goes on", async () => {
  const e = await fortuneEngine({ pipelineDepth: 4 });
  await e.start(0n);
  try {
    // XGrammar refuses the first (a rule it cannot find), traps on the second (nesting).
    for (const k of [1, 10]) {
      const { g, key } = refused(k);
      const times: number[] = [];
      for (let i = 0; i < 100; i++) {
        const t0 = performance.now();
        const err = await runBounded(e, hostileRequest("x", g, i), 10_000).then(
          () => new Error("ran"),
          (err) => err,
        );
        assertRefusal(err, key, `${key} try ${i}`);
        times.push(performance.now() - t0);
      }
      const later = times.slice(1).reduce((a, b) => a + b, 0);
      console.log(`${key}: first ${times[0]!.toFixed(0)} ms, the next 99 ${later.toFixed(0)} ms`);
      ok(later < 2000, `${later} ms`);
    }
    const v = VALID[0]!;
    const r = await runBounded(e, hostileRequest(v.prompt, v.g, 1));
    ok(v.ok(text(r.ids)), text(r.ids));
  } finally {
    await e.cleanup();
  }
});

/** `n` distinct strings. */
const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}w`);

Deno.test("a compile past the time budget is refused by name; a guided stream in flight is rebuilt and ends valid", async () => {
  const e = await fortuneEngine({ pipelineDepth: 4, guidedLimits: { compileTimeoutMs: 2500 } });
  await e.start(0n);
  try {
    const v = VALID[0]!;
    const free = hostileRequest("You will ", undefined, 0, 40);
    const alone = await runBounded(e, free);
    // A guided stream under way when the slow compile starts.
    const stream = e.generate(hostileRequest(v.prompt, v.g, 3), new RequestContext());
    const it = stream[Symbol.asyncIterator]();
    const first = await it.next();
    ok(!first.done);
    const ids = [...first.value.token_ids];
    const big = { choice: words(100_000, "slow") };
    const t0 = performance.now();
    let refusedMs = 0;
    const [slow, beside] = await Promise.all([
      runBounded(e, hostileRequest("x", big, 1)).then(() => new Error("ran"), (err) => {
        refusedMs = performance.now() - t0;
        return err;
      }),
      runBounded(e, free),
      (async () => {
        for (let c = await it.next(); !c.done; c = await it.next()) ids.push(...c.value.token_ids);
      })(),
    ]);
    assertRefusal(slow, "choice", "the slow compile");
    ok(String(slow.message).includes("2500 ms"), slow.message);
    ok(v.ok(text(ids)), text(ids));
    deepStrictEqual(beside.ids, alone.ids);
    console.log(`refused after ${refusedMs.toFixed(0)} ms (budget 2500 ms)`);
    // Remembered: refused at once the second time.
    const t1 = performance.now();
    const again = await runBounded(e, hostileRequest("x", big, 2)).then(() => 0, (err) => err);
    assertRefusal(again, "choice", "the slow compile again");
    ok(performance.now() - t1 < 1000, `${performance.now() - t1} ms`);
  } finally {
    await e.cleanup();
  }
});

Deno.test("8 concurrent 60,000-string choice compiles do not stall a free stream", async () => {
  const e = await fortuneEngine({ pipelineDepth: 4 });
  await e.start(0n);
  try {
    const alone = await freeGaps(e, { tokens: 100 });
    const beside = await freeGaps(e, { tokens: 100, compiles: 8, strings: 60_000 });
    console.log(
      `free stream gaps (ms): alone ${JSON.stringify(alone.gaps)}, beside 8 compiles ${
        JSON.stringify(beside.gaps)
      }`,
    );
    // On the engine's thread, each compile took 5 to 12 s; in the grammar worker they take a
    // core, and the engine's steps the other.
    ok(beside.gaps.max < 1500, `a gap of ${beside.gaps.max} ms`);
  } finally {
    await e.cleanup();
  }
});

Deno.test("WorkerEngine (the serve path): 200 refused among valid and free requests; the grammar worker nested in the engine's worker", async () => {
  const path = FORTUNE;
  const e = new WorkerEngine(
    () => new Worker(new URL("../../adapters/deno/worker.ts", import.meta.url), { type: "module" }),
    { model: { kind: "dir", path, name: "fortune" }, kvBlocks: 64 },
  );
  await e.start(0n);
  try {
    const r = await hostileRun(e, { refusedTotal: 200, perWave: 50, first: 5000 });
    equal(r.refused, 200);
    equal(r.valid, 8);
    console.log(`through the worker: ${r.refused} refused in ${(r.ms / 1000).toFixed(1)} s`);
  } finally {
    await e.cleanup();
  }
});

const req = (g: Record<string, unknown>): PreprocessedRequest => hostileRequest("", g, 0);
const allowedIds = (mask: Uint32Array) =>
  Array.from({ length: VOCAB }, (_, i) => i).filter((i) => allows(mask, i));

for (const worker of [true, false]) {
  Deno.test(`Guides ${worker ? "in the grammar worker" : "on the engine's thread"}: a matcher follows its output across 60 faults of others`, async () => {
    const guides = new Guides(() => Promise.resolve(tokenizer), VOCAB, undefined, { worker });
    try {
      const g = { grammar: 'root ::= "ab" [0-9]{1,40} "!"' };
      const guide = (await guides.guide(req(g)))!;
      const fresh = async (out: number[]) => {
        const f = (await guides.guide(req(g)))!;
        await f.prepare(out);
        const m = allowedIds(f.nextMask(out));
        f.dispose();
        return m;
      };
      const out = [..."ab"].map((c) => c.charCodeAt(0));
      for (let k = 0; k < 60; k++) {
        const { g: bad, key } = refused(k);
        const err = await guides.guide(req(bad)).then(() => new Error("compiled"), (e) => e);
        assertRefusal(err, key, `refused #${k}`);
        await guide.prepare(out);
        deepStrictEqual(allowedIds(guide.nextMask(out)), await fresh(out), `after fault ${k}`);
        out.push(0x30 + (k % 10));
        if (out.length > 38) out.splice(2, 20);
      }
      // 25 of the 60 reach XGrammar (the EBNF ones: Kiln's compilers refuse the JSON and regex
      // ones first); the guide moved to the main lane at the first and was never touched again.
      ok(guides.counts.faults >= 20, `${guides.counts.faults} faults`);
      equal(guides.counts.rebuilds, 1, "rebuilt once, in the main lane");
      equal(guides.counts.workers, worker ? 1 : 0, "fresh instances in the same worker");
      guide.dispose();
    } finally {
      guides.close();
    }
  });
}

Deno.test("Guides: constraints past the size limits are refused by name before compiling", async () => {
  const guides = new Guides(() => Promise.resolve(tokenizer), VOCAB, undefined, {
    maxChoices: 10,
    maxGrammarChars: 200,
  });
  try {
    const refusedBy = async (g: Record<string, unknown>, key: string, needle: string) => {
      const err = await guides.guide(req(g)).then(() => new Error("compiled"), (e) => e);
      assertRefusal(err, key, JSON.stringify(g).slice(0, 40));
      ok(err.message.includes(needle), err.message);
    };
    await refusedBy({ choice: words(11, "c") }, "choice", "11 strings");
    await refusedBy({ choice: ["x".repeat(201)] }, "choice", "201 characters");
    await refusedBy({ grammar: `root ::= "${"y".repeat(200)}"` }, "grammar", "characters");
    await refusedBy({ regex: "z".repeat(201) }, "regex", "characters");
    await refusedBy({ json: { enum: ["q".repeat(200)] } }, "json", "characters");
    ok((await guides.guide(req({ choice: words(10, "c") }))) !== undefined);
    equal(guides.counts.workers, 1, "only the last one reached the grammar worker");
  } finally {
    guides.close();
  }
});

Deno.test("a grammar worker that cannot start: XGrammar runs on the engine's thread instead", async () => {
  const { encoded } = vocabulary(tokenizer, VOCAB);
  let spawned = 0;
  const client = new GrammarClient(
    () => Promise.resolve({ encoded, size: VOCAB, eos: [257] }),
    {
      spawn: () => {
        spawned++;
        // A worker whose module fails as it loads (as a missing file does in a page).
        const failing = "data:text/javascript,throw new Error('no grammar worker here')";
        return new Worker(failing, { type: "module" });
      },
      timeoutMs: 10_000,
      initTimeoutMs: 60_000,
      capacity: 4,
    },
  );
  try {
    const spec = { key: "choice" as const, choices: ["yes", "no"] };
    const g = await client.grammar("yes|no", spec, PROBE);
    ok(g.id > 0);
    await client.grammar("no|yes", { key: "choice", choices: ["no", "yes"] }, PROBE);
    equal(spawned, 1, "one try, then this thread");
  } finally {
    client.close();
  }
});

Deno.test("on a thread whose XGrammar cannot be renewed (an app's CommonJS-wrapped bundle), a fault turns guided decoding off there, by name, never a hang", async () => {
  const { encoded } = vocabulary(tokenizer, VOCAB);
  const realm = await xgrammarMaker();
  let made = 0;
  const once: XGrammarMaker = {
    renewable: false,
    make: () => {
      if (made++ > 0) throw new Error("XGrammar cannot be started again in this realm");
      return realm.make();
    },
  };
  const client = new GrammarClient(
    () => Promise.resolve({ encoded, size: VOCAB, eos: [257] }),
    {
      spawn: () => undefined,
      threadHost: () => new GrammarHost(() => Promise.resolve(once)),
      timeoutMs: 10_000,
      initTimeoutMs: 60_000,
      capacity: 4,
    },
  );
  try {
    const ok1 = await client.grammar("a", { key: "choice", choices: ["a"] }, PROBE);
    ok(ok1.id > 0);
    const bad = { key: "grammar" as const, ebnf: 'root ::= "a" undefined_rule' };
    const fault = await client.grammar("bad", bad, PROBE).then(() => undefined, (e) => e);
    equal(fault?.kind, "fault");
    ok(String(fault?.reason).includes("undefined_rule"), String(fault?.reason));
    for (let i = 0; i < 2; i++) {
      const off = await client.grammar(`b${i}`, { key: "choice", choices: ["b"] }, PROBE)
        .then(() => undefined, (e) => e);
      equal(off?.kind, "unavailable");
      ok(String(off?.message).includes("cannot start again"), String(off?.message));
    }
    equal(made, 2, "one instance, and one refused try");
  } finally {
    client.close();
  }
});
