/**
 * `exactNumberBounds`: each bounded `number` becomes parts XGrammar bounds exactly (integers in
 * range, decimals bounded by their integer part), and every value those parts let through, read
 * as XGrammar reads them, lies within the original bounds.
 */
import { deepStrictEqual, equal, ok, throws } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { exactNumberBounds } from "./number_bounds.ts";

type Schema = Record<string, unknown>;

/** Whether XGrammar's reading of `part` admits the decimal text `text`. */
function admits(part: Schema, text: string): boolean {
  const x = Number(text);
  const ip = Math.trunc(x) === 0 && text.startsWith("-") ? -0 : Math.trunc(x);
  const min = (part.minimum as number | undefined) ?? -Infinity;
  const max = (part.maximum as number | undefined) ?? Infinity;
  if (part.type === "integer") {
    return Number.isInteger(x) && !text.includes(".") && x >= min && x <= max;
  }
  // A negative zero integer part ("-0.5") is outside a range that starts at 0.
  if (Object.is(ip, -0)) return min < 0 && max >= 0;
  return ip >= min && ip <= max;
}

const TEXTS: string[] = [];
for (let i = -70; i <= 70; i++) {
  TEXTS.push(String(i));
  for (const f of ["0", "01", "25", "5", "99"]) TEXTS.push(`${i}.${f}`);
  if (i === 0) { for (const f of ["0", "25", "5", "99"]) TEXTS.push(`-0.${f}`); }
}

function check(schema: Schema, inBounds: (x: number) => boolean): Schema[] {
  const out = exactNumberBounds(schema, "f");
  const parts = (out.anyOf as Schema[] | undefined) ?? [out];
  let admitted = 0;
  for (const t of TEXTS) {
    if (parts.some((p) => admits(p, t))) {
      admitted++;
      ok(inBounds(Number(t)), `${JSON.stringify(schema)}: ${t} is admitted but out of bounds`);
    }
  }
  ok(admitted > 0, "some values stay writable");
  return parts;
}

Deno.test("bounded numbers: every value the rewrite admits lies within the bounds", () => {
  deepStrictEqual(check({ type: "number", minimum: 0, maximum: 1 }, (x) => x >= 0 && x <= 1), [
    { type: "integer", minimum: 0, maximum: 1 },
    { type: "number", minimum: 0, maximum: 0 },
  ]);
  deepStrictEqual(
    check({ type: "number", minimum: -40.5, maximum: 60.25 }, (x) => x >= -40.5 && x <= 60.25),
    [
      { type: "integer", minimum: -40, maximum: 60 },
      { type: "number", minimum: 0, maximum: 59 },
      { type: "number", minimum: -39, maximum: -1 },
    ],
  );
  check({ type: "number", exclusiveMinimum: 2, exclusiveMaximum: 5 }, (x) => x > 2 && x < 5);
  check({ type: "number", minimum: 2, exclusiveMinimum: true, maximum: 5 }, (x) => x > 2 && x <= 5);
  check({ type: "number", minimum: -7 }, (x) => x >= -7);
  check({ type: "number", maximum: -3.5 }, (x) => x <= -3.5);
  check({ type: "number", minimum: -9, maximum: -2 }, (x) => x >= -9 && x <= -2);
});

Deno.test("bounded numbers: nested places are rewritten, others kept", () => {
  const out = exactNumberBounds({
    type: "object",
    title: "t",
    properties: {
      a: { type: "number", maximum: 3, description: "kept" },
      b: { type: "array", items: { type: "number", minimum: 1, maximum: 2 } },
      c: { anyOf: [{ type: "number", minimum: 0, maximum: 9 }, { type: "null" }] },
      d: { type: "number", minimum: 0, maximum: 1, multipleOf: 0.5 },
      e: { type: "integer", minimum: 0, maximum: 1 },
      f: { $ref: "#/$defs/g" },
    },
    $defs: { g: { type: "number", minimum: 5, maximum: 6 } },
  }, "f");
  const p = out.properties as Record<string, Schema>;
  equal(out.title, "t");
  equal(p.a!.description, "kept");
  ok(Array.isArray(p.a!.anyOf));
  ok(Array.isArray((p.b!.items as Schema).anyOf));
  ok(Array.isArray(((p.c!.anyOf as Schema[])[0]!).anyOf));
  deepStrictEqual(p.d, { type: "number", minimum: 0, maximum: 1, multipleOf: 0.5 });
  deepStrictEqual(p.e, { type: "integer", minimum: 0, maximum: 1 });
  ok(Array.isArray(((out.$defs as Record<string, Schema>).g!).anyOf));
});

Deno.test("bounded numbers: bounds with nothing exactly writable are refused, naming the place", () => {
  throws(
    () =>
      exactNumberBounds({
        type: "object",
        properties: { r: { type: "number", minimum: 0.25, maximum: 0.75 } },
      }, "request.sampling_options.guided_decoding.json"),
    (e: unknown) =>
      e instanceof EngineError && e.type === "InvalidArgument" &&
      e.message.includes("#/properties/r") && e.message.includes("guided_decoding.json"),
  );
});
