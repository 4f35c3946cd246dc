/**
 * `format` grammars checked against an independent validator, ajv-formats (full mode), over
 * strings drawn from each format's language, random edits of them, and edge cases: every string
 * the grammar accepts (as JSON text, through XGrammar's matcher) is valid to ajv, and every
 * string ajv finds valid is accepted, except where Kiln's language is a documented subset (the
 * `SUBSET` predicates, from `formats.ts`'s list). Dates are checked exhaustively over months,
 * days and leap and non-leap years. Formats Kiln does not enforce are refused by name.
 */
import { ok, strictEqual as equal, throws } from "node:assert/strict";
import { Ajv } from "ajv";
import addFormatsModule from "ajv-formats";
import { Rules } from "./ebnf.ts";
import { FORMAT_PATTERNS, formatRegex } from "./formats.ts";
import { SchemaRefusal } from "./refusal.ts";
import { jsonStringExpr, type StringConstraints } from "./strings.ts";
import { byteMatcher } from "./test_grammar.ts";
import { mutate, rng, sample } from "./test_sample.ts";

const ajv = new Ajv({ strict: false });
(addFormatsModule as unknown as (a: Ajv, o: { mode: string }) => void)(ajv, { mode: "full" });

const timeIn = (t: string) =>
  /^\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$/.test(t) &&
  (!/^\d\d:\d\d:60/.test(t) || /^23:59:60(\.\d+)?([Zz]|[+-]00:00)$/.test(t));
const hostIn = (h: string, min: number) => {
  const labels = h.split("."), n = labels.length, len = labels.map((l) => l.length);
  return n >= min && len.every((l) => l > 0) && // no trailing dot
    ((n <= 4 && len.every((l) => l <= 63) && (n < 4 || len[3]! <= 61)) ||
      (n >= 5 && n <= 8 && len.every((l) => l <= 30)));
};
/** RFC 3339 Appendix A's duration, written again here from the ABNF. */
const DURATION =
  /^P(?:(?:\d+D|\d+M(?:\d+D)?|\d+Y(?:\d+M(?:\d+D)?)?)(?:T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S))?|T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)|\d+W)$/;

/** Where Kiln enforces a subset of what ajv-formats accepts: whether `s` is in it. */
const SUBSET: Record<string, (s: string) => boolean> = {
  "time": timeIn,
  "date-time": (s) => {
    const m = /^(\d{4}-\d\d-\d\d)[Tt](.*)$/s.exec(s);
    return m !== null && timeIn(m[2]!);
  },
  "duration": (s) => DURATION.test(s),
  "hostname": (s) => hostIn(s, 1),
  "email": (s) => hostIn(s.slice(s.lastIndexOf("@") + 1), 2),
  "uuid": (s) => !/^urn:/i.test(s),
};

/**
 * ajv-formats reads `scheme:/` as the start of an authority too (`a:/[::1]`, and `a://b:c` as an
 * empty authority then the path `/b:c`) and takes `"` in a URI reference: for these only
 * soundness is checked against it (and the grammar against its own pattern, and `URI_CASES`).
 */
const SOUND_ONLY = new Set(["uri", "uri-reference"]);
const URI_CASES: [string, boolean][] = [
  ["http://x/y?z#w", true],
  ["http://[::1]:80/", true],
  ["http://[v1.x]/", true],
  ["a:/[::1]", false],
  ["a://b:c", false],
  ["a:", false],
  ["1a:b", false],
  ["a b:c", false],
  ["mailto:a@b", true],
];

/** Characters edits draw from, per format. */
const POOL: Record<string, string> = {
  "date": "0123456789-",
  "time": "0123456789:.+-Zz",
  "date-time": "0123456789:.+-TtZ ",
  "duration": "0123456789PYMWDTHS",
  "hostname": "abz09-.",
  "email": "az09.-@+_",
  "ipv4": "0123456789.",
  "ipv6": "0123456789abcdefABCDEF:.",
  "uuid": "0123456789abcdefABCDEFg-",
  "uri": "az09:/?#[]@!$&'()*+,;=%.-_~\" ",
  "uri-reference": "az09:/?#[]@!$&'()*+,;=%.-_~\" ",
  "json-pointer": 'a~01/"\\\t',
  "relative-json-pointer": "0123#/~a-+",
};

const EDGES: Record<string, string[]> = {
  "time": [
    "23:59:60Z",
    "23:59:60+00:00",
    "15:59:60-08:00",
    "24:00:00Z",
    "12:00:00",
    "12:00:00+0100",
    "12:00:00.5z",
  ],
  "date-time": [
    "2024-02-29T12:00:00Z",
    "2023-02-29T12:00:00Z",
    "2024-01-01 12:00:00Z",
    "2024-01-01t00:00:00z",
  ],
  "duration": ["P", "PT", "P1Y1D", "PT1H1S", "P1W", "P1Y2M3DT4H5M6S", "P1M1W", "p1d"],
  "hostname": ["a", "a-", "-a", "a.b.", `${"a".repeat(63)}.b`, `${"a".repeat(64)}.b`, "1.2.3.4"],
  "email": ["a@b.c", "a.b@c.d", "a..b@c.d", ".a@b.c", "a@b", "a@-b.c", '"a"@b.c', "a@[1.2.3.4]"],
  "ipv4": ["0.0.0.0", "255.255.255.255", "256.0.0.0", "01.0.0.0", "1.2.3"],
  "ipv6": [
    "::",
    "::1",
    "1::",
    "1:2:3:4:5:6:7:8",
    "1:2:3:4:5:6:7::",
    "::ffff:1.2.3.4",
    "1::2::3",
    "12345::",
  ],
  "uuid": ["00000000-0000-0000-0000-000000000000", "urn:uuid:00000000-0000-0000-0000-000000000000"],
  "uri": [
    "a:",
    "http://x/y?z#w",
    "a:/[::1]",
    "http://[::1]:80/",
    "http://[v1.x]/",
    "1a:b",
    "a b:c",
  ],
  "uri-reference": ["", "//x", "/a", "a/b", "a:b", "?q", "#f", '"', "%zz"],
  "json-pointer": ["", "/", "/a~0b~1c", "/~2", "a", "//"],
  "relative-json-pointer": ["0", "1#", "0/a", "01", "1+1/a", "#"],
};

async function checkFormat(format: string, seed: number) {
  const validate = ajv.compile({ type: "string", format });
  const rules = new Rules();
  const m = await byteMatcher(rules.text(jsonStringExpr(rules, { format }, "")));
  const r = rng(seed), tree = formatRegex(format);
  const candidates = new Set(EDGES[format] ?? []);
  for (let i = 0; i < 300; i++) {
    const s = sample(tree, r);
    candidates.add(s);
    for (let k = 0; k < 3; k++) candidates.add(mutate(s, POOL[format] ?? "a", r));
  }
  const inSubset = SUBSET[format] ?? (() => true);
  const own = new RegExp(`^(?:${FORMAT_PATTERNS[format]})$`, "u");
  let yes = 0, no = 0;
  for (const s of candidates) {
    const mine = m.accepts(JSON.stringify(s)), theirs = validate(s) as boolean;
    const where = `${format}: ${JSON.stringify(s)}`;
    equal(mine, own.test(s), `${where}: the grammar and the format's pattern differ`);
    if (mine) ok(theirs && inSubset(s), `${where} accepted; ajv: ${theirs}`);
    if (theirs && inSubset(s) && !SOUND_ONLY.has(format)) ok(mine, `${where} refused`);
    if (mine) yes++;
    else no++;
  }
  if (format === "uri") {
    for (const [s, want] of URI_CASES) equal(m.accepts(JSON.stringify(s)), want, s);
  }
  m.dispose();
  return { yes, no };
}

Deno.test("formats: accepted exactly as ajv-formats validates (or its documented subset)", async () => {
  const counts: string[] = [];
  for (const format of Object.keys(FORMAT_PATTERNS)) {
    const { yes, no } = await checkFormat(format, 11);
    ok(yes >= 250 && no >= 100, `${format}: ${yes} accepted, ${no} refused`);
    counts.push(`${format} ${yes}/${no}`);
  }
  console.log(`accepted/refused: ${counts.join(", ")}`);
});

Deno.test("date: every month and day, leap and common years, exactly as ajv", async () => {
  const validate = ajv.compile({ type: "string", format: "date" });
  const rules = new Rules();
  const m = await byteMatcher(rules.text(jsonStringExpr(rules, { format: "date" }, "")));
  let n = 0;
  for (
    const year of ["0000", "0004", "1900", "1996", "2000", "2023", "2024", "2100", "2400", "9999"]
  ) {
    for (let month = 0; month <= 13; month++) {
      for (let day = 0; day <= 32; day++) {
        const s = `${year}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`;
        equal(m.accepts(JSON.stringify(s)), validate(s), s);
        n++;
      }
    }
  }
  ok(m.accepts('"2024-02-29"') && !m.accepts('"2023-02-29"') && !m.accepts('"2024-02-30"'));
  equal(n, 10 * 14 * 33);
});

Deno.test("format with pattern and lengths: the intersection, exactly", async () => {
  const cases: [StringConstraints, string][] = [
    [{ format: "date", pattern: "^2024-0[12]" }, "date"],
    [{ format: "ipv4", maxLength: 9 }, "ipv4"],
    [{ format: "uuid", pattern: "^[0-9a-f-]+$" }, "uuid"],
    [{ format: "json-pointer", minLength: 2, maxLength: 4 }, "json-pointer"],
  ];
  for (const [c, format] of cases) {
    const validate = ajv.compile({ type: "string", ...c });
    const rules = new Rules();
    const m = await byteMatcher(rules.text(jsonStringExpr(rules, c, "")));
    const r = rng(5), tree = formatRegex(format);
    for (let i = 0; i < 400; i++) {
      const s = i % 2 === 0 ? sample(tree, r) : mutate(sample(tree, r), POOL[format]!, r);
      equal(
        m.accepts(JSON.stringify(s)),
        validate(s),
        `${JSON.stringify(c)}: ${JSON.stringify(s)}`,
      );
    }
    m.dispose();
  }
});

Deno.test("formats Kiln does not enforce are refused by name", () => {
  for (
    const format of [
      "idn-email",
      "idn-hostname",
      "iri",
      "iri-reference",
      "uri-template",
      "regex",
      "phone",
      "",
    ]
  ) {
    throws(() => jsonStringExpr(new Rules(), { format }, "/f"), (e) => {
      ok(e instanceof SchemaRefusal && e.keyword === "format" && e.pointer === "/f", String(e));
      ok(e.why.includes(JSON.stringify(format)), e.why);
      return true;
    });
  }
});
