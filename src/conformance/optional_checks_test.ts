import { ok, strictEqual as equal } from "node:assert/strict";
import type { LLMEngine } from "../contract/engine.ts";
import { probeRequest } from "../contract/engine_hooks.ts";
import type { EngineConfig } from "../contract/types.ts";
import { MockEngine } from "../engines/mock/mock_engine.ts";
import { formatReport, runConformanceReport } from "./kit.ts";
import { UNKNOWN_CONTROL } from "./optional_checks.ts";

/** The mock with `change` applied: members replaced, added, or deleted (set to undefined). */
function mock(change: (e: MockEngine) => void): () => LLMEngine {
  return () => {
    const e = new MockEngine();
    change(e);
    return e;
  };
}

/** The mock whose start() reports `edit(config)`. */
const withConfig = (edit: (c: EngineConfig) => EngineConfig) =>
  mock((e) => {
    const start = e.start.bind(e);
    e.start = async (id) => edit(await start(id));
  });

async function failure(factory: () => LLMEngine) {
  const report = await runConformanceReport(factory, { cancelDeadlineMs: 300 });
  equal(report.checks.at(-1)?.name, "optional_members", formatReport(report));
  return report.failure!;
}

Deno.test("an engine with none of Dynamo 1.5's members passes optional_members", async () => {
  const bare = mock((e) => {
    const o = e as unknown as Record<string, unknown>;
    for (const m of ["isQuiescent", "healthCheckPayload", "supportedControls", "engineControl"]) {
      o[m] = undefined;
    }
    const start = e.start.bind(e);
    e.start = async (id) => {
      const { llm: _, ...flat } = await start(id);
      return flat;
    };
  });
  const report = await runConformanceReport(bare);
  ok(report.passed, formatReport(report));
});

Deno.test("llm: a field that is not a count, or that disagrees with the flat one, fails", async () => {
  const negative = await failure(withConfig((c) => ({ ...c, llm: { max_num_seqs: -1 } })));
  equal(negative.kind, "LlmRegistrationInvalid");
  ok(negative.message.includes("llm.max_num_seqs is -1, not a count"), negative.message);
  const aliases = await failure(withConfig((c) => ({ ...c, model_aliases: [""] })));
  ok(aliases.message.includes('model_aliases is [""]'), aliases.message);
  const differs = await failure(
    withConfig((c) => ({ ...c, llm: { ...c.llm, kv_cache_block_size: 32 } })),
  );
  ok(differs.message.includes("llm.kv_cache_block_size is 32 but kv_cache_block_size is 16"));
});

Deno.test("controls: accepting an unknown name, or refusing it untyped, fails naming it", async () => {
  const untyped = await failure(mock((e) => {
    e.engineControl = () => Promise.reject(new Error("nope"));
  }));
  equal(untyped.kind, "UnknownControlAccepted");
  ok(untyped.message.includes(`${UNKNOWN_CONTROL}: it failed with Error: nope`), untyped.message);
  const twice = await failure(mock((e) => {
    e.supportedControls = () => Promise.resolve(["a", "a"]);
  }));
  equal(twice.kind, "ControlsInvalid");
  ok(twice.message.includes('gave ["a", "a"], not distinct names'), twice.message);
});

Deno.test("health check: a payload that is not marked a probe, or does not end, fails", async () => {
  const unmarked = await failure(mock((e) => {
    e.healthCheckPayload = () => {
      const { is_probe: _, ...plain } = probeRequest("kiln-mock", 1);
      return Promise.resolve(plain);
    };
  }));
  equal(unmarked.kind, "HealthCheckPayloadInvalid");
  ok(unmarked.message.includes("not marked is_probe"), unmarked.message);
  const invalid = await failure(mock((e) => {
    e.healthCheckPayload = () =>
      Promise.resolve({ ...probeRequest("kiln-mock", 1), token_ids: [-1] });
  }));
  ok(invalid.message.includes("not a valid request"), invalid.message);
});

Deno.test("quiescence: a wrong type, false for ever, or false after drain() fails", async () => {
  const typed = await failure(mock((e) => {
    e.isQuiescent = () => Promise.resolve("yes" as unknown as boolean);
  }));
  equal(typed.kind, "QuiescenceInconsistent");
  ok(typed.message.includes('isQuiescent() gave "yes"'), typed.message);
  const busy = await failure(mock((e) => (e.isQuiescent = () => Promise.resolve(false))));
  ok(busy.message.includes("still false 300 ms after the last request ended"), busy.message);
  const drained = await failure(mock((e) => {
    let drainedYet = false;
    const drain = e.drain.bind(e);
    e.drain = () => drain().then(() => void (drainedYet = true));
    e.isQuiescent = () => Promise.resolve(drainedYet ? false : null);
  }));
  ok(drained.message.includes("false after drain() resolved"), drained.message);
});
