/**
 * Guided JSON is valid, drawn at temperature 1 on fortune: 20 seeded completions under each
 * schema of `bench/engine/guided_schemas.json` (the schemas `bench/engine/guided_validity.ts` runs by the
 * thousand), beside free requests in the same steps; each is detokenized with the model's
 * tokenizer, parsed and validated by ajv against the whole schema, as it is. (XGrammar's own
 * JSON converter let through number bounds and raw control characters; Kiln's compiler,
 * `schema/compile.ts`, and `vocabulary`'s `noControl` close both.)
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import type { PreprocessedRequest } from "../../contract/types.ts";
import { loadText } from "../../text/load.ts";
import { collect, FORTUNE, fortuneEngine } from "../../../test/support/fortune_engine.ts";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { checkCompletion, type GuidedSchemas } from "../../../test/support/json_schema.ts";

const PER_SCHEMA = 20;
const SCHEMAS = JSON.parse(
  await Deno.readTextFile(new URL("../../../bench/engine/guided_schemas.json", import.meta.url)),
) as GuidedSchemas;

Deno.test("guided JSON at temperature 1 parses and validates (ajv), beside free requests", async () => {
  const { tokenizer } = await loadText(dirFiles(FORTUNE));
  const e = await fortuneEngine({ kvBlocks: 512, maxNumSeqs: 24 });
  await e.start(0n);
  try {
    const req = (prompt: string, seed: number, json?: object): PreprocessedRequest => ({
      model: "fortune",
      token_ids: tokenizer.encode(prompt),
      stop_conditions: { max_tokens: 256 },
      sampling_options: { temperature: 1, seed, ...(json ? { guided_decoding: { json } } : {}) },
      output_options: {},
      eos_token_ids: [...tokenizer.eosTokenIds],
      annotations: [],
    });
    const jobs = Object.entries(SCHEMAS).flatMap(([name, s], k) =>
      Array.from({ length: PER_SCHEMA }, (_, i) => ({ name, s, seed: 1000 * k + i }))
    );
    let done = false, freeRuns = 0;
    const free = async () => {
      while (!done) await collect(e, req("You will ", 5000 + freeRuns++));
    };
    const frees = [free(), free()];
    const results: { name: string; text: string; finish: unknown }[] = [];
    const lane = async () => {
      for (let j = jobs.shift(); j !== undefined; j = jobs.shift()) {
        const r = await collect(e, req(j.s.prompt, j.seed, j.s.schema));
        results.push({
          name: j.name,
          text: tokenizer.decode(r.ids, { skipSpecial: true }),
          finish: r.last.finish_reason,
        });
      }
    };
    await Promise.all(Array.from({ length: 20 }, lane));
    done = true;
    await Promise.all(frees);
    ok(freeRuns > 0 && e.steps.mixed > 0, "guided and free requests shared steps");
    for (const [name, s] of Object.entries(SCHEMAS)) {
      const mine = results.filter((r) => r.name === name);
      equal(mine.length, PER_SCHEMA);
      const cut = mine.filter((r) => r.finish === "length");
      ok(cut.length <= 1, `${name}: ${cut.length} cut by max_tokens`);
      for (const r of mine) {
        if (r.finish === "length") continue;
        equal(r.finish, "eos", `${name}: ${r.text}`);
        const v = checkCompletion(s.schema, r.text);
        ok(v.valid, `${name}: ${r.text}: ${v.why}`);
      }
    }
  } finally {
    await e.cleanup();
  }
});
