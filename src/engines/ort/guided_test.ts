/**
 * `guided_decoding` in OrtEngine on the wasm EP (the CPU sampler applies the bitmask): sampled
 * JSON validates against its schema, a regex and a choice hold, the greedy constrained tokens
 * are WebGpuEngine's, and bad options are refused before the request runs.
 */
import { deepStrictEqual, match, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { EngineError } from "../../contract/errors.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import { bytes, collect, fortuneEngine, request } from "../../../test/support/fortune_engine.ts";
import { assertValid, SCHEMA } from "../../../test/support/json_schema.ts";
import { onnxFortune } from "../../../test/support/onnx_fortune.ts";
import { OrtEngine } from "./engine.ts";

const EOS = 257;
const text = (ids: number[]) => new TextDecoder().decode(Uint8Array.from(ids));
const guided = (prompt: string, g: Record<string, unknown>, temperature: number, seed = 1) =>
  request(bytes(prompt), {
    eos_token_ids: [EOS],
    stop_conditions: { max_tokens: 300 },
    sampling_options: { temperature, seed, guided_decoding: g },
  }) satisfies PreprocessedRequest;

Deno.test("wasm EP: guided_decoding constrains OrtEngine's output as WebGpuEngine's", async () => {
  const ort = new OrtEngine({
    files: dirFiles(await onnxFortune()),
    name: "fortune",
    executionProvider: "wasm",
  });
  await ort.start(0n);
  const kiln = await fortuneEngine();
  await kiln.start(0n);
  try {
    const [json, re, choice] = await Promise.all([
      collect(ort, guided("Your fortune: ", { json: SCHEMA }, 1, 3)),
      collect(ort, guided("Call ", { regex: "[0-9]{3}-(ab|cd)" }, 1, 4)),
      collect(ort, guided("Will I? ", { choice: ["yes", "no", "maybe"] }, 1, 5)),
    ]);
    for (const r of [json, re, choice]) equal(r.last.finish_reason, "eos", text(r.ids));
    assertValid(SCHEMA, JSON.parse(text(json.ids)));
    match(text(re.ids), /^[0-9]{3}-(ab|cd)$/);
    ok(["yes", "no", "maybe"].includes(text(choice.ids)));
    const greedy = guided("Your fortune: ", { json: SCHEMA }, 0);
    const [a, b] = [await collect(ort, greedy), await collect(kiln, greedy)];
    deepStrictEqual(a.ids, b.ids, `${text(a.ids)} vs ${text(b.ids)}`);
    await rejects(
      collect(ort, guided("x", { regex: "(" }, 1)),
      (e) =>
        e instanceof EngineError && e.param === "request.sampling_options.guided_decoding.regex",
    );
  } finally {
    await ort.cleanup();
    await kiln.cleanup();
  }
});

Deno.test("wasm EP: forced stretches give the output of sampling every token, in fewer runs", async () => {
  const open = (guidedForcing: "chunk" | "off") =>
    new OrtEngine({
      files: dirFiles(onnx),
      name: "fortune",
      executionProvider: "wasm",
      guidedForcing,
    });
  const onnx = await onnxFortune();
  const [off, on] = [open("off"), open("chunk")];
  await off.start(0n);
  await on.start(0n);
  try {
    for (const [t, seed] of [[0, 1], [1, 2]] as const) {
      const r = guided("Your fortune: ", { json: SCHEMA }, t, seed);
      const runs = [off.steps.runs, on.steps.runs];
      const [a, b] = [await collect(off, r), await collect(on, r)];
      deepStrictEqual(b.ids, a.ids, `${text(b.ids)} vs ${text(a.ids)}`);
      deepStrictEqual(b.last.completion_usage, a.last.completion_usage);
      equal(b.last.finish_reason, "eos");
      const [ra, rb] = [off.steps.runs - runs[0]!, on.steps.runs - runs[1]!];
      ok(rb < ra, `runs: ${rb} forcing, ${ra} not`);
    }
    ok(on.steps.forcedTokens > 0);
    equal(off.steps.forcedTokens, 0);
  } finally {
    await off.cleanup();
    await on.cleanup();
  }
});
