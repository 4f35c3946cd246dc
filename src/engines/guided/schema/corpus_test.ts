/**
 * The JSON Schema corpus (`test/fixtures/schemas/corpus.json`: the JSON Schema Test Suite's draft
 * 2020-12 schemas with their instances, and 205 real-world schemas from JSONSchemaBench): every
 * schema compiles or is refused with a `SchemaRefusal` (nothing else is thrown); no instance the
 * suite calls invalid is accepted (in Kiln's compact text); strings drawn from each grammar parse
 * and are valid for ajv (where ajv agrees with the suite's own verdicts on that schema: ajv gets
 * some `$dynamicRef` and `unevaluated*` cases wrong). The counts compiled are printed, and held
 * to a floor so that a change that refuses more shows here.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import { compileSchema } from "./compile.ts";
import { SchemaRefusal } from "./refusal.ts";
import { derives, parseEbnf, sample } from "./test_ebnf.ts";
import { prng } from "./test_schemas.ts";

interface Entry {
  id: string;
  schema: unknown;
  tests?: { data: unknown; valid: boolean }[];
}

const CORPUS = JSON.parse(
  await Deno.readTextFile(
    new URL("../../../../test/fixtures/schemas/corpus.json", import.meta.url),
  ),
).schemas as Entry[];

const ajv = new Ajv2020({
  strict: false,
  allowUnionTypes: true,
  validateFormats: false,
  ownProperties: true,
});

/** `v` as Kiln writes JSON: `", "` between items, `": "` after keys. */
const text = (v: unknown): string =>
  Array.isArray(v)
    ? `[${v.map(text).join(", ")}]`
    : v !== null && typeof v === "object"
    ? `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${text(x)}`).join(", ")}}`
    : JSON.stringify(v);

/** ajv's validator of `e`'s schema, if it compiles and agrees with every verdict of the suite. */
function validator(e: Entry): ((v: unknown) => boolean) | undefined {
  if (JSON.stringify(e.schema).includes("$dynamicRef")) return undefined;
  try {
    const validate = ajv.compile(e.schema as object);
    return (e.tests ?? []).every((t) => validate(t.data) === t.valid) ? validate : undefined;
  } catch {
    return undefined; // an older draft's form ajv's 2020-12 validator refuses
  }
}

Deno.test("the schema corpus: compiled or refused by name; nothing invalid accepted or drawn", () => {
  const counts = { suite: 0, suiteRefused: 0, bench: 0, benchRefused: 0, sampled: 0 };
  const random = prng(596);
  for (const e of CORPUS) {
    const suite = e.id.startsWith("suite/");
    let ebnf: string;
    try {
      ebnf = compileSchema(e.schema);
    } catch (err) {
      ok(err instanceof SchemaRefusal, `${e.id}: ${err}`);
      counts[suite ? "suiteRefused" : "benchRefused"]++;
      continue;
    }
    counts[suite ? "suite" : "bench"]++;
    const g = parseEbnf(ebnf);
    for (const t of e.tests ?? []) {
      if (!t.valid) equal(derives(g, text(t.data)), false, `${e.id} accepts ${text(t.data)}`);
    }
    const validate = validator(e);
    if (validate === undefined) continue;
    counts.sampled++;
    for (let k = 0; k < 10; k++) {
      const s = sample(g, random);
      ok(validate(JSON.parse(s)), `${e.id}: ${s}`);
    }
  }
  console.log(counts);
  ok(counts.suite >= 340 && counts.bench >= 185 && counts.sampled >= 450, JSON.stringify(counts));
});
