/**
 * A schema document indexed for references: every place by its JSON Pointer, the base URI in
 * force there (`$id`, resolved against the enclosing one; the document's own is
 * `https://kiln.invalid/schema.json` when it has none), the resources `$id` makes and the names
 * `$anchor` and `$dynamicAnchor` give. `$ref` resolves against those, within the document only: a
 * reference to anything outside it is refused. `$dynamicRef` (and 2019-09's `$recursiveRef`) is
 * resolved when the dynamic scope cannot change its target: the anchor it names is the only one
 * of that name, or the document's root resource has one (the root is always the outermost scope).
 */
import { keywordOf } from "./pointer.ts";
import { childPointer, SchemaRefusal } from "./refusal.ts";

/** The base URI of a document with no `$id`. */
export const DEFAULT_BASE = "https://kiln.invalid/schema.json";

/** Keywords whose value is a subschema. */
const ONE_SCHEMA = [
  "additionalProperties",
  "unevaluatedProperties",
  "additionalItems",
  "unevaluatedItems",
  "contains",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
  "contentSchema",
  "items",
];
/** Keywords whose value is a list of subschemas (`items` in drafts before 2020-12). */
const LIST_SCHEMA = ["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/** Keywords whose value maps names to subschemas. */
const MAP_SCHEMA = [
  "properties",
  "patternProperties",
  "dependentSchemas",
  "$defs",
  "definitions",
  "dependencies",
];
/** Keywords whose value is data, not schemas (never searched for `$id` or anchors). */
const DATA = new Set(["enum", "const", "default", "examples", "example"]);

/** Objects and arrays nested deeper than this are refused (JSON texts, `enum` values too). */
const MAX_JSON_DEPTH = 512;

/** Limits on the document itself. */
export interface DocLimits {
  /** Subschemas nested deeper than this are refused. */
  maxDepth: number;
  /** More places (objects and arrays) than this are refused. */
  maxNodes: number;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The indexed document. */
export class Doc {
  readonly #bases = new Map<string, string>();
  readonly #resources = new Map<string, string>();
  readonly #anchors = new Map<string, string>();
  readonly #dynamic = new Map<string, string[]>();
  readonly #recursive: string[] = [];
  readonly #draft4Ids: string[] = [];
  #refs = false;
  #count = 0;

  constructor(readonly root: unknown, readonly limits: DocLimits) {
    this.#visit(root, "", DEFAULT_BASE, true, 0, 0);
    // Draft 4's `id` in a subschema moves the base URI `$ref`s resolve against; Kiln reads `$id`.
    const id = this.#draft4Ids[0];
    if (id !== undefined && this.#refs) {
      throw new SchemaRefusal(
        "id",
        childPointer(id, "id"),
        "draft 4's id beside $ref: write it as $id",
      );
    }
  }

  /** The value at `ptr`, or `undefined` when there is none. */
  node(ptr: string): unknown {
    let v: unknown = this.root;
    for (const seg of segments(ptr)) {
      if (Array.isArray(v) && /^(0|[1-9][0-9]*)$/.test(seg)) v = v[Number(seg)];
      else if (isObject(v) && Object.hasOwn(v, seg)) v = v[seg];
      else return undefined;
    }
    return v;
  }

  /** The base URI in force at `ptr`. */
  base(ptr: string): string {
    for (let p = ptr;; p = p.slice(0, p.lastIndexOf("/"))) {
      const b = this.#bases.get(p);
      if (b !== undefined) return b;
      if (p === "") return DEFAULT_BASE;
    }
  }

  /** The pointer `ref` (a `$ref` value in the schema at `from`) names. */
  resolve(ref: string, from: string, keyword = "$ref"): string {
    const where = childPointer(from, keyword);
    let url: URL, frag: string;
    try {
      url = new URL(ref, this.base(from));
      frag = decodeURIComponent(url.hash.slice(1));
    } catch {
      throw new SchemaRefusal(keyword, where, `${JSON.stringify(ref)} is not a URI reference`);
    }
    url.hash = "";
    const res = this.#resources.get(url.href);
    if (res === undefined) {
      throw new SchemaRefusal(
        keyword,
        where,
        `${JSON.stringify(ref)} is outside the schema (only references within it are followed)`,
      );
    }
    const ptr = frag === "" || frag.startsWith("/")
      ? res + frag
      : this.#anchors.get(`${url.href}#${frag}`);
    if (ptr === undefined || this.node(ptr) === undefined) {
      throw new SchemaRefusal(keyword, where, `${JSON.stringify(ref)} names nothing in the schema`);
    }
    return ptr;
  }

  /** The pointer a `$dynamicRef` names, when the dynamic scope cannot change it. */
  dynamic(ref: string, from: string): string {
    const target = this.resolve(ref, from, "$dynamicRef");
    const node = this.node(target);
    const name = isObject(node) ? node.$dynamicAnchor : undefined;
    if (typeof name !== "string" || ref.split("#")[1] !== name) return target;
    const all = this.#dynamic.get(name) ?? [];
    const atRoot = all.filter((p) => this.base(p) === this.base(""));
    if (atRoot.length === 1) return atRoot[0]!;
    if (all.length === 1) return target;
    throw new SchemaRefusal(
      "$dynamicRef",
      childPointer(from, "$dynamicRef"),
      `several $dynamicAnchor ${JSON.stringify(name)}: the target depends on the dynamic scope`,
    );
  }

  /** The pointer a `$recursiveRef` (2019-09) names. */
  recursive(ref: string, from: string): string {
    const where = childPointer(from, "$recursiveRef");
    if (ref !== "#") throw new SchemaRefusal("$recursiveRef", where, 'only "#" is defined');
    const target = this.resolve("#", from, "$recursiveRef");
    const node = this.node(target);
    if (!isObject(node) || node.$recursiveAnchor !== true) return target;
    const root = this.root;
    if (isObject(root) && root.$recursiveAnchor === true) return "";
    if (this.#recursive.length === 1) return target;
    throw new SchemaRefusal("$recursiveRef", where, "the target depends on the dynamic scope");
  }

  /**
   * Index `v` at `ptr` (a schema when `schema`), `levels` schemas deep and `depth` objects and
   * arrays deep.
   */
  #visit(
    v: unknown,
    ptr: string,
    base: string,
    schema: boolean,
    levels: number,
    depth: number,
  ): void {
    if (typeof v !== "object" || v === null) return;
    const at = keywordOf(ptr);
    if (schema && !Array.isArray(v) && ++levels > this.limits.maxDepth) {
      throw new SchemaRefusal(
        at,
        ptr,
        `subschemas nested more than ${this.limits.maxDepth} deep (Kiln's limit)`,
      );
    }
    if (depth > MAX_JSON_DEPTH) {
      throw new SchemaRefusal(
        at,
        ptr,
        `objects and arrays nested more than ${MAX_JSON_DEPTH} deep`,
      );
    }
    if (++this.#count > this.limits.maxNodes) {
      throw new SchemaRefusal(
        "$defs",
        "",
        `more than ${this.limits.maxNodes} objects and arrays (Kiln's limit)`,
      );
    }
    if (Array.isArray(v)) {
      v.forEach((x, i) => this.#visit(x, childPointer(ptr, i), base, schema, levels, depth + 1));
      return;
    }
    if (schema) base = this.#identify(v as Record<string, unknown>, ptr, base);
    for (const [k, x] of Object.entries(v)) {
      const p = childPointer(ptr, k);
      if (schema && DATA.has(k)) this.#visit(x, p, base, false, levels, depth + 1);
      else if (schema && MAP_SCHEMA.includes(k) && isObject(x)) {
        for (const [name, s] of Object.entries(x)) {
          this.#visit(s, childPointer(p, name), base, true, levels, depth + 2);
        }
      } else {
        const sub = schema && (ONE_SCHEMA.includes(k) || LIST_SCHEMA.includes(k));
        this.#visit(x, p, base, sub, levels, depth + 1);
      }
    }
  }

  /** Register `$id`, `$anchor`, `$dynamicAnchor` of the schema at `ptr`; its base URI. */
  #identify(v: Record<string, unknown>, ptr: string, base: string): string {
    const anchor = (name: unknown, keyword: string) => {
      if (typeof name !== "string" || !/^[A-Za-z_][-A-Za-z0-9._]*$/.test(name)) {
        throw new SchemaRefusal(keyword, childPointer(ptr, keyword), "not a valid anchor name");
      }
      this.#anchors.set(`${base}#${name}`, ptr);
    };
    // Draft 4's `id` at the root names the document as `$id` does (refs resolve the same).
    const key = v.$id !== undefined
      ? "$id"
      : ptr === "" && typeof v.id === "string"
      ? "id"
      : undefined;
    const id = key === undefined ? undefined : v[key];
    if (typeof id === "string" && id.startsWith("#") && !id.startsWith("#/")) {
      anchor(id.slice(1), key!); // drafts 4 to 7: `$id: "#name"` is an anchor
    } else if (key !== undefined) {
      let url: URL;
      try {
        url = new URL(String(id), base);
      } catch {
        throw new SchemaRefusal(key, childPointer(ptr, key), "not a URI reference");
      }
      if (typeof id !== "string" || (url.hash !== "" && url.hash !== "#")) {
        throw new SchemaRefusal(key, childPointer(ptr, key), "expected a URI with no fragment");
      }
      url.hash = "";
      base = url.href;
      this.#resources.set(base, ptr);
    }
    if (ptr === "") this.#resources.set(base, "");
    this.#bases.set(ptr, base);
    if (v.$anchor !== undefined) anchor(v.$anchor, "$anchor");
    if (v.$dynamicAnchor !== undefined) {
      anchor(v.$dynamicAnchor, "$dynamicAnchor");
      const name = v.$dynamicAnchor as string;
      this.#dynamic.set(name, [...this.#dynamic.get(name) ?? [], ptr]);
    }
    if (v.$recursiveAnchor === true) this.#recursive.push(ptr);
    if (ptr !== "" && typeof v.id === "string" && v.$id === undefined) this.#draft4Ids.push(ptr);
    if (v.$ref !== undefined || v.$dynamicRef !== undefined || v.$recursiveRef !== undefined) {
      this.#refs = true;
    }
    return base;
  }
}

/** The reference tokens of a JSON Pointer, unescaped. */
function segments(ptr: string): string[] {
  if (ptr === "") return [];
  return ptr.slice(1).split("/").map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
}
