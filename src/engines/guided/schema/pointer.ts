/** JSON Pointers into a schema, read back: the keyword a place is under. */

/** Keywords whose members are named by the schema's author (a segment after them is a name). */
const NAMING = new Set([
  "properties",
  "patternProperties",
  "$defs",
  "definitions",
  "dependentSchemas",
  "dependencies",
]);

/**
 * The keyword a pointer ends in: its last segment that is neither an index nor a name under a
 * naming keyword (`/properties/a/items/0` is under `items`); `schema` for the root.
 */
export function keywordOf(ptr: string): string {
  const segs = ptr.replace(/^!/, "").split("/").slice(1);
  for (let i = segs.length - 1; i >= 0; i--) {
    if (!/^\d+$/.test(segs[i]!) && !NAMING.has(segs[i - 1] ?? "")) {
      return segs[i]!.replaceAll("~1", "/").replaceAll("~0", "~");
    }
  }
  return "schema";
}
