/**
 * Dynamo's `sampling_options.guided_decoding` (`GuidedDecodingOptions`) checked and put in one
 * canonical form: exactly one of `json`, `regex`, `choice`, `grammar`; `backend` absent or
 * `"xgrammar"`. Dynamo serializes absent options as `null`, read here as absent.
 *
 * `specGrammar` writes the EBNF XGrammar is given, by Kiln's own compilers: a JSON Schema's
 * (`schema/compile.ts`), a regex's (`schema/strings.ts`), a choice's; what they cannot enforce
 * exactly is a `ConstraintRefusal` in Kiln's words (for a schema: the keyword and where it is,
 * `docs/json_schema.md`). It runs where XGrammar runs (the grammar worker), never on the engine's
 * thread: a large schema takes its compile budget there, beside no stream.
 */
import { describe } from "../../contract/describe.ts";
import { EngineError } from "../../contract/errors.ts";
import { compileSchema } from "./schema/compile.ts";
import { Rules } from "./schema/ebnf.ts";
import { literalChoice } from "./schema/grammar.ts";
import { SchemaRefusal } from "./schema/refusal.ts";
import { PatternRefusal } from "./schema/regex.ts";
import { regexGrammar } from "./schema/strings.ts";

/** The request field every message names. */
export const FIELD = "request.sampling_options.guided_decoding";

/** What constrains the output. */
export type GuideSpec =
  /** One JSON value a JSON Schema accepts: the schema's JSON text (`true`: any value). */
  | { key: "json"; schema: string }
  | { key: "regex"; pattern: string }
  | { key: "choice"; choices: string[] }
  /** EBNF (GBNF style), the start rule `root`. */
  | { key: "grammar"; ebnf: string };

const KINDS = ["json", "regex", "choice", "grammar"] as const;
const KEYS = new Set<string>([...KINDS, "backend", "whitespace_pattern"]);

/** `guided_decoding` as a {@linkcode GuideSpec}; anything else is `InvalidArgument` naming it. */
export function parseGuided(value: unknown): GuideSpec {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw EngineError.invalidField(FIELD, `expected an object, got ${describe(value)}`);
  }
  const g = value as Record<string, unknown>;
  for (const k of Object.keys(g)) {
    if (!KEYS.has(k)) {
      throw EngineError.invalidField(
        `${FIELD}.${k}`,
        `unknown option (known: ${[...KEYS].join(", ")})`,
      );
    }
  }
  const backend = g.backend ?? undefined;
  if (backend !== undefined && backend !== "xgrammar") {
    throw EngineError.invalidField(
      `${FIELD}.backend`,
      `${describe(backend)} is not available (Kiln's backend is "xgrammar")`,
    );
  }
  // `json: false` is a schema (the one nothing satisfies, refused below by name); a `false`
  // for another kind means it is not asked for.
  const given = KINDS.filter((k) =>
    g[k] !== undefined && g[k] !== null && (k === "json" || g[k] !== false)
  );
  if (given.length !== 1) {
    throw EngineError.invalidField(
      FIELD,
      given.length === 0
        ? `one of ${KINDS.join(", ")} is needed`
        : `exactly one of ${KINDS.join(", ")} is allowed, got ${given.join(" and ")}`,
    );
  }
  if ((g.whitespace_pattern ?? undefined) !== undefined) {
    throw EngineError.invalidField(
      `${FIELD}.whitespace_pattern`,
      'not supported by the xgrammar backend (JSON comes out compact: ", " and ": " ' +
        "between items, no other whitespace)",
    );
  }
  const key = given[0]!;
  const v = g[key];
  const field = `${FIELD}.${key}`;
  switch (key) {
    case "json":
      return { key, schema: jsonSchemaText(v, field) };
    case "regex":
      if (typeof v !== "string") throw EngineError.invalidField(field, "expected a string");
      return { key, pattern: v };
    case "choice":
      if (!Array.isArray(v) || v.length === 0 || !v.every((c) => typeof c === "string")) {
        throw EngineError.invalidField(field, `expected a non-empty list of strings`);
      }
      if (v.some((c) => /\p{Cs}/u.test(c as string))) {
        throw EngineError.invalidField(
          field,
          "a choice holds a lone surrogate, which no UTF-8 output can carry",
        );
      }
      return { key, choices: v as string[] };
    case "grammar":
      if (typeof v !== "string" || v.trim() === "") {
        throw EngineError.invalidField(field, "expected EBNF text");
      }
      return { key, ebnf: v };
  }
}

/** Why Kiln will not constrain output by a spec, in its words (the caller names the field). */
export class ConstraintRefusal extends Error {
  override readonly name = "ConstraintRefusal";
}

/** `json`'s schema as JSON text (`true` for `true` or `{}`): an object, or its JSON text. */
function jsonSchemaText(v: unknown, field: string): string {
  let schema = v;
  if (typeof v === "string") {
    try {
      schema = JSON.parse(v);
    } catch (e) {
      throw EngineError.invalidField(field, `the schema is not JSON: ${(e as Error).message}`);
    }
  }
  if (
    typeof schema !== "boolean" &&
    (typeof schema !== "object" || schema === null || Array.isArray(schema))
  ) {
    throw EngineError.invalidField(field, `expected a JSON Schema object, got ${describe(v)}`);
  }
  let text: string;
  try {
    text = JSON.stringify(schema);
  } catch {
    throw EngineError.invalidField(field, "the schema is nested too deep to read");
  }
  return text === "{}" ? "true" : text;
}

/** Schemas compiled lately (by their JSON text): their grammar, or why they were refused. */
const compiled = new Map<string, string | SchemaRefusal>();
const COMPILED_CAPACITY = 64;
/** Larger schemas and grammars (characters, together) are not kept. */
const COMPILED_CHARS = 256 << 10;

/** The grammar of the values the schema `text` (JSON) accepts. */
function jsonGrammar(text: string): string {
  let out = compiled.get(text);
  if (out === undefined) {
    try {
      out = compileSchema(JSON.parse(text));
    } catch (e) {
      if (!(e instanceof SchemaRefusal)) throw e;
      out = e;
    }
    while (compiled.size >= COMPILED_CAPACITY) compiled.delete(compiled.keys().next().value!);
  } else compiled.delete(text); // most recently used last
  if (text.length + (typeof out === "string" ? out.length : 0) <= COMPILED_CHARS) {
    compiled.set(text, out);
  }
  if (out instanceof SchemaRefusal) throw new ConstraintRefusal(out.message);
  return out;
}

/** The grammar of the output `regex` matches whole. */
function regexEbnf(pattern: string): string {
  try {
    return regexGrammar(pattern);
  } catch (e) {
    // The reasons read after "the regex": "is not a valid ...", "has a backreference at ...".
    if (e instanceof PatternRefusal) throw new ConstraintRefusal(`the regex ${e.why}`);
    throw e;
  }
}

/**
 * The EBNF (start rule `root`) XGrammar compiles for `spec`; `ConstraintRefusal` for what
 * Kiln's compilers cannot enforce exactly. A grammar is given as it is.
 */
export function specGrammar(spec: GuideSpec): string {
  switch (spec.key) {
    case "json":
      return jsonGrammar(spec.schema);
    case "regex":
      return regexEbnf(spec.pattern);
    case "choice":
      return choiceGrammar(spec.choices);
    case "grammar":
      return spec.ebnf;
  }
}

/** A canonical text of `spec`: the compiled-grammar cache's key. */
export function specKey(spec: GuideSpec): string {
  return JSON.stringify(spec);
}

/**
 * `choice` as EBNF, each string an exact literal, written as a trie of them (XGrammar 0.1.27
 * misreads an alternation whose literals share a first byte: `schema/choice.ts`).
 */
export function choiceGrammar(choices: readonly string[]): string {
  const rules = new Rules();
  return rules.text(literalChoice(rules, choices));
}
