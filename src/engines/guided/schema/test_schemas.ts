/**
 * For tests: random JSON Schemas over the keywords the compiler handles (types, bounds,
 * lengths, enums of any JSON value, items and properties in every form, combinators, `not`,
 * `if`, dependencies, `$ref` to `$defs` with recursion, unevaluated keywords), drawn from a
 * seeded generator, and a seeded generator itself.
 */

/** A seeded PRNG (mulberry32): numbers in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type S = Record<string, unknown>;

/** Draws schemas. */
export class SchemaGen {
  constructor(readonly r: () => number) {}

  int(lo: number, hi: number): number {
    return lo + Math.floor(this.r() * (hi - lo + 1));
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.r() * xs.length)]!;
  }

  chance(p: number): boolean {
    return this.r() < p;
  }

  /** A number for a bound: small, negative, fractional, or huge. */
  num(): number {
    return this.pick([
      () => this.int(-20, 20),
      () => this.int(-1000, 1000),
      () => this.int(-20, 20) / this.pick([2, 4, 10, 100]),
      () => this.pick([2 ** 53, -(2 ** 53), 1e20, -1e20, 123456789012345680000]),
      () => this.int(0, 3) / 10,
    ])();
  }

  /** Any JSON value, small. */
  value(depth = 0): unknown {
    const k = this.int(0, depth > 1 ? 4 : 6);
    switch (k) {
      case 0:
        return null;
      case 1:
        return this.chance(0.5);
      case 2:
        return this.num();
      case 3:
        return this.pick(["a", "b", "xyz", "", 'q"uo\\te', "é", "日本", "\n"]);
      case 4:
        return this.int(-3, 3);
      case 5:
        return Array.from({ length: this.int(0, 2) }, () => this.value(depth + 1));
      default:
        return Object.fromEntries(
          Array.from(
            { length: this.int(0, 2) },
            (_, i) => [this.pick(["k", "v", "w"]) + i, this.value(depth + 1)],
          ),
        );
    }
  }

  numberSchema(): S {
    const s: S = { type: this.pick(["integer", "number"]) };
    if (this.chance(0.6)) s[this.pick(["minimum", "exclusiveMinimum"])] = this.num();
    if (this.chance(0.6)) s[this.pick(["maximum", "exclusiveMaximum"])] = this.num();
    if (this.chance(0.25)) s.multipleOf = this.pick([2, 3, 7, 10, 0.5, 12]);
    if (this.chance(0.1)) delete s.type;
    return s;
  }

  stringSchema(): S {
    const s: S = { type: "string" };
    if (this.chance(0.4)) s.minLength = this.int(0, 3);
    if (this.chance(0.4)) s.maxLength = this.int(0, 6);
    return s;
  }

  arraySchema(d: number): S {
    const s: S = { type: "array" };
    if (this.chance(0.6)) s.items = this.schema(d + 1);
    if (this.chance(0.3)) {
      s.prefixItems = Array.from({ length: this.int(1, 2) }, () => this.schema(d + 1));
    }
    if (this.chance(0.4)) s.minItems = this.int(0, 3);
    if (this.chance(0.4)) s.maxItems = this.int(0, 4);
    if (this.chance(0.2)) {
      s.contains = this.schema(d + 1);
      if (this.chance(0.5)) s.minContains = this.int(0, 2);
      if (this.chance(0.3)) s.maxContains = this.int(1, 3);
    }
    if (this.chance(0.2)) {
      s.uniqueItems = true;
      if (this.chance(0.7)) {
        s.items = { enum: Array.from({ length: this.int(1, 4) }, () => this.value()) };
      }
    }
    return s;
  }

  objectSchema(d: number): S {
    const names = ["a", "b", "c", "d e", "é"].filter(() => this.chance(0.5));
    const s: S = { type: "object" };
    if (names.length > 0 || this.chance(0.5)) {
      s.properties = Object.fromEntries(
        names.map((n) => [n, this.chance(0.1) ? false : this.schema(d + 1)]),
      );
    }
    const req = [...names, "z"].filter(() => this.chance(0.4));
    if (req.length > 0) s.required = req;
    if (this.chance(0.4)) {
      s.additionalProperties = this.pick([false, true, () => this.schema(d + 1)]);
    }
    if (typeof s.additionalProperties === "function") {
      s.additionalProperties = (s.additionalProperties as () => S)();
    }
    if (this.chance(0.2)) s.minProperties = this.int(0, 2);
    if (this.chance(0.2)) s.maxProperties = this.int(0, 3);
    if (this.chance(0.15) && names.length > 1) s.dependentRequired = { [names[0]!]: [names[1]!] };
    if (this.chance(0.1) && names.length > 0) {
      s.dependentSchemas = { [names[0]!]: { required: ["q"] } };
    }
    if (this.chance(0.1)) s.propertyNames = { enum: ["a", "b", "x", "y"] };
    if (this.chance(0.1)) s.patternProperties = { "^[ab]$": this.schema(d + 1) };
    return s;
  }

  /** A schema at nesting depth `d`. */
  schema(d = 0): unknown {
    if (d > 3) {
      return this.pick([{ type: "integer" }, { type: "boolean" }, { enum: ["x", 1] }, true]);
    }
    const k = this.int(0, 19);
    switch (k) {
      case 0:
      case 1:
        return this.numberSchema();
      case 2:
        return this.stringSchema();
      case 3:
        return { enum: Array.from({ length: this.int(1, 4) }, () => this.value()) };
      case 4:
        return { const: this.value() };
      case 5:
      case 6:
        return this.arraySchema(d);
      case 7:
      case 8:
        return this.objectSchema(d);
      case 9:
        return { anyOf: [this.schema(d + 1), this.schema(d + 1)] };
      case 10:
        return { oneOf: [this.schema(d + 1), this.schema(d + 1)] };
      case 11:
        return { allOf: [this.schema(d + 1), this.schema(d + 1)] };
      case 12:
        return {
          not: this.pick([{ type: "string" }, { const: this.value() }, this.numberSchema(), {
            required: ["a"],
          }]),
        };
      case 13:
        return { if: this.schema(d + 1), then: this.schema(d + 1), else: this.schema(d + 1) };
      case 14:
        return this.pick([true, false, {}, { type: ["string", "null"] }, { type: "null" }, {
          type: "boolean",
        }]);
      case 15:
        return this.pick([{ minimum: this.num() }, { minLength: 2 }, { maxItems: 1 }, {
          required: ["a"],
        }]);
      case 16:
        return {
          ...this.objectSchema(d),
          anyOf: [this.objectSchema(d + 1), this.objectSchema(d + 1)],
        };
      case 17:
        return { type: "string", nullable: true, maxLength: 2 };
      case 18:
        return {
          allOf: [this.objectSchema(d + 1)],
          unevaluatedProperties: this.pick([false, { type: "integer" }]),
        };
      default:
        return { $ref: "#/$defs/tree" };
    }
  }

  /** A whole document: a schema with `$defs` (a recursive tree) its `$ref`s may use. */
  document(): unknown {
    const root = this.schema();
    const defs = {
      tree: {
        type: "object",
        properties: {
          v: { type: "integer", minimum: 0, maximum: 9 },
          kids: { type: "array", items: { $ref: "#/$defs/tree" }, maxItems: 2 },
        },
        required: ["v"],
      },
    };
    return typeof root === "object" && root !== null ? { ...root, $defs: defs } : root;
  }
}
