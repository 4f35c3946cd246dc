/**
 * A JSON Schema (or a pattern in one) that Kiln will not constrain output by: the keyword, where
 * it is in the schema (a JSON Pointer, RFC 6901) and why, in Kiln's words. The guided-decoding
 * layer turns it into `InvalidArgument` naming `guided_decoding.json`.
 */
export class SchemaRefusal extends Error {
  override readonly name = "SchemaRefusal";

  /**
   * @param keyword The keyword refused (`uniqueItems`, `pattern`, `format`, ...).
   * @param pointer Where it is: a JSON Pointer into the schema (`""` for the root).
   * @param why Why, in a phrase that reads after "keyword at pointer: ".
   */
  constructor(readonly keyword: string, readonly pointer: string, readonly why: string) {
    super(`${keyword} at ${JSON.stringify(pointer === "" ? "#" : `#${pointer}`)}: ${why}`);
  }
}

/** The JSON Pointer of `key` under `pointer` (`~` and `/` escaped). */
export function childPointer(pointer: string, key: string | number): string {
  return `${pointer}/${String(key).replaceAll("~", "~0").replaceAll("/", "~1")}`;
}
