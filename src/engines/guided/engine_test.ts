/**
 * `guided_decoding` in WebGpuEngine on fortune (a byte vocabulary), compiled by XGrammar: output
 * drawn at temperature 1 under a JSON Schema (nested object, enum, array and string bounds,
 * number ranges, no other properties) parses and validates (ajv); regex, choice and EBNF
 * outputs match; a free greedy request beside guided ones streams what it streams alone; bad
 * options are `InvalidArgument` naming the option; a dead end ends the stream with an error
 * finish reason, and a grammar matched whole with no stop token to end on ends it `stop`.
 */
import { deepStrictEqual, match, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import { bytes, collect, request, withFortune } from "../../../test/support/fortune_engine.ts";
import type { WebGpuEngine } from "../webgpu/engine.ts";
import { assertValid, SCHEMA } from "../../../test/support/json_schema.ts";

const EOS = 257;
const text = (ids: number[]) => new TextDecoder().decode(Uint8Array.from(ids));

const guided = (
  prompt: string,
  g: Record<string, unknown>,
  seed: number,
  extra: Partial<PreprocessedRequest["stop_conditions"]> = {},
): PreprocessedRequest =>
  request(bytes(prompt), {
    eos_token_ids: [EOS],
    stop_conditions: { max_tokens: 400, ...extra },
    sampling_options: { temperature: 1, seed, guided_decoding: g },
  });

const withEngine = (f: (e: WebGpuEngine) => Promise<void>) => withFortune({ pipelineDepth: 4 }, f);

Deno.test("json, regex, choice and grammar outputs at temperature 1 are what they ask for", async () => {
  await withEngine(async (e) => {
    const seeds = [1, 2, 3];
    const runs = await Promise.all([
      ...seeds.map((s) => collect(e, guided("Your fortune: ", { json: SCHEMA }, s))),
      ...seeds.map((s) => collect(e, guided("Call ", { regex: "[0-9]{3}-(ab|cd)x?" }, s))),
      ...seeds.map((s) => collect(e, guided("Will I? ", { choice: ["yes", "no", 'ma"ybe'] }, s))),
      ...seeds.map((s) =>
        collect(
          e,
          guided("Say ", {
            grammar: 'root ::= greet " " name "!"\ngreet ::= "hi" | "hello"\nname ::= [a-z]{1,6}',
          }, s),
        )
      ),
    ]);
    for (const r of runs) equal(r.last.finish_reason, "eos", text(r.ids));
    const outs = runs.map((r) => text(r.ids));
    for (const json of outs.slice(0, 3)) {
      assertValid(SCHEMA, JSON.parse(json));
    }
    for (const o of outs.slice(3, 6)) match(o, /^[0-9]{3}-(ab|cd)x?$/);
    for (const o of outs.slice(6, 9)) ok(["yes", "no", 'ma"ybe'].includes(o), o);
    for (const o of outs.slice(9, 12)) match(o, /^(hi|hello) [a-z]{1,6}!$/);
    // A schema given as JSON text; a bare array.
    const asText = await collect(e, guided("Your fortune: ", { json: JSON.stringify(SCHEMA) }, 4));
    assertValid(SCHEMA, JSON.parse(text(asText.ids)));
    const any = await collect(
      e,
      guided("Data: ", {
        json: { type: "array", items: { type: "integer", minimum: 0, maximum: 99 }, maxItems: 3 },
      }, 5),
    );
    const array = JSON.parse(text(any.ids));
    ok(Array.isArray(array) && array.length <= 3, text(any.ids));
  });
});

Deno.test("a free greedy request beside guided ones streams what it streams alone", async () => {
  await withEngine(async (e) => {
    const free = request(bytes("You will "), { stop_conditions: { max_tokens: 40 } });
    const alone = await collect(e, free);
    const [beside, json] = await Promise.all([
      collect(e, free),
      collect(e, guided("Your fortune: ", { json: SCHEMA }, 7)),
      collect(e, guided("Will I? ", { choice: ["yes", "no"] }, 8)),
    ]);
    deepStrictEqual(beside.ids, alone.ids);
    assertValid(SCHEMA, JSON.parse(text(json.ids)));
    ok(e.steps.maxInFlight > 1, "free steps still pipelined");
  });
});

Deno.test("bad guided_decoding is InvalidArgument naming the option", async () => {
  await withEngine(async (e) => {
    const field = "request.sampling_options.guided_decoding";
    const refused = (g: Record<string, unknown>, param: string, needle: string) =>
      rejects(collect(e, guided("x", g, 1)), (err: unknown) => {
        ok(err instanceof EngineError, String(err));
        equal(err.type, "InvalidArgument");
        equal(err.param, param, err.message);
        ok(err.message.includes(needle), err.message);
        return true;
      });
    await refused({ json: { type: "strin" } }, `${field}.json`, "strin");
    await refused({ regex: "[0-9" }, `${field}.regex`, "[");
    await refused({ grammar: "root ::= foo" }, `${field}.grammar`, "foo");
    await refused({ grammar: 'root ::= "a" root' }, `${field}.grammar`, "no finite string");
    await refused({ choice: [] }, `${field}.choice`, "non-empty");
    await refused({ json: true, foo: 1 }, `${field}.foo`, "unknown option");
    await refused({ json: true, regex: "a" }, field, "exactly one");
    await refused({ json: true, backend: "outlines" }, `${field}.backend`, "outlines");
    await refused({ json: true, whitespace_pattern: " *" }, `${field}.whitespace_pattern`, "not");
    // Dynamo's nulls are absent options.
    const ok1 = await collect(
      e,
      guided("Will I? ", { choice: ["yes"], regex: null, json: null, backend: "xgrammar" }, 1),
    );
    equal(text(ok1.ids), "yes");
    equal(e.stats.failed, 0, "refused before admission");
  });
});

Deno.test("a dead end ends the stream with an error finish reason, never a hang; a grammar matched whole with no stop token ends stop", async () => {
  await withEngine(async (e) => {
    // After "yes" only EOS may come, which min_tokens bans: no token is left.
    const banned = await collect(e, guided("Will I? ", { choice: ["yes"] }, 1, { min_tokens: 6 }));
    equal(text(banned.ids), "yes");
    const r1 = banned.last.finish_reason;
    ok(typeof r1 === "object" && r1.error.includes("dead end at output position 3"), `${r1}`);
    // ignore_eos: no stop token ends the grammar, and matched whole nothing may follow it: the
    // output is complete, and ends `stop`.
    const whole = await collect(
      e,
      guided("Will I? ", { choice: ["no"] }, 1, { ignore_eos: true }),
    );
    equal(text(whole.ids), "no");
    equal(whole.last.finish_reason, "stop");
    equal(e.usedBlocks, 0);
  });
});
