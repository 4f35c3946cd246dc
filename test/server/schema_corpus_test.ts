/**
 * Issue 37's corpus, sampled for `npm test` (the whole run is `deno task bench:schemas`): every
 * sixth schema of `test/fixtures/schemas/corpus.json` through a live `serve`'s token route as
 * `guided_decoding.json`, one completion at temperature 1 each. Nothing accepted and then
 * invalid, no 5xx, no hang, no worker restart; every refusal is a typed 400 naming a keyword of
 * docs/json_schema.md's table.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { runCorpus } from "../../bench/engine/schema_corpus_run.ts";

Deno.test("the schema corpus through serve: nothing accepted then invalid, nothing down", async () => {
  const r = await runCorpus({ completions: 1, every: 6, maxTokens: 128, concurrency: 16 });
  console.log(JSON.stringify(r.totals), JSON.stringify(r.refusedBy));
  deepStrictEqual(r.problems, []);
  const t = r.totals;
  equal(t.acceptedInvalid + t.serverErrors + t.hangs + t.restarts + t.refusedUnnamed, 0);
  equal(t.refused + t.completions, t.schemas, "every schema refused or completed");
  ok(t.stop > t.schemas / 3, `${t.stop} of ${t.completions} completions ended stop`);
  ok(t.valid >= t.stop - t.unverifiable && t.unverifiable <= t.stop / 10, JSON.stringify(t));
});
