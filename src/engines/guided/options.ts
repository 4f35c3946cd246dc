/**
 * Dynamo's `sampling_options.guided_decoding` (`GuidedDecodingOptions`) checked and put in one
 * canonical form: exactly one of `json`, `regex`, `choice`, `grammar`; `backend` absent or
 * `"xgrammar"`. Dynamo serializes absent options as `null`, read here as absent.
 */
import { describe } from "../../contract/describe.ts";
import { EngineError } from "../../contract/errors.ts";
import { exactNumberBounds } from "./number_bounds.ts";

/** The request field every message names. */
export const FIELD = "request.sampling_options.guided_decoding";

/** What constrains the output. */
export type GuideSpec =
  /** Any JSON value (`json: true`), or one a JSON Schema accepts (its text). */
  | { key: "json"; schema: string | undefined }
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
  const given = KINDS.filter((k) => g[k] !== undefined && g[k] !== null && g[k] !== false);
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
      return { key, schema: jsonSchema(v, field) };
    case "regex":
      if (typeof v !== "string") throw EngineError.invalidField(field, "expected a string");
      return { key, pattern: v };
    case "choice":
      if (!Array.isArray(v) || v.length === 0 || !v.every((c) => typeof c === "string")) {
        throw EngineError.invalidField(field, `expected a non-empty list of strings`);
      }
      return { key, choices: v as string[] };
    case "grammar":
      if (typeof v !== "string" || v.trim() === "") {
        throw EngineError.invalidField(field, "expected EBNF text");
      }
      return { key, ebnf: v };
  }
}

/** `json`'s schema as text: `true` or `{}` for any JSON value; an object or its JSON text. */
function jsonSchema(v: unknown, field: string): string | undefined {
  let schema = v;
  if (typeof v === "string") {
    try {
      schema = JSON.parse(v);
    } catch (e) {
      throw EngineError.invalidField(field, `the schema is not JSON: ${(e as Error).message}`);
    }
  }
  if (schema === true) return undefined;
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    throw EngineError.invalidField(field, `expected a JSON Schema object, got ${describe(v)}`);
  }
  if (Object.keys(schema).length === 0) return undefined;
  return JSON.stringify(exactNumberBounds(schema as Record<string, unknown>, field));
}

/** A canonical text of `spec`: the compiled-grammar cache's key. */
export function specKey(spec: GuideSpec): string {
  return JSON.stringify(spec);
}

/** `choice` as EBNF: `root ::= "a" | "b"`, each string escaped. */
export function choiceGrammar(choices: readonly string[]): string {
  const quote = (s: string) =>
    '"' + Array.from(s, (c) => {
      const code = c.codePointAt(0)!;
      if (c === "\\" || c === '"') return "\\" + c;
      return code < 0x20 || code === 0x7f ? "\\x" + code.toString(16).padStart(2, "0") : c;
    }).join("") + '"';
  return `root ::= ${choices.map(quote).join(" | ")}`;
}
