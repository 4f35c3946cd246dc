/**
 * The shader composer: a kernel is a `shaders/<file>.wgsl` that names the fragments it needs on
 * lines of their own,
 *
 * ```wgsl
 * //! import lib/quant_words
 * //! import formats/{format}
 * ```
 *
 * and a variant string picks the file and fills the `{param}` placeholders of its imports:
 * `product/matvec:format=q4_k` is `product/matvec.wgsl` with `shaders/formats/q4_k.wgsl` imported.
 * Imports resolve recursively (fragments may import fragments, with the same parameters), each
 * file once per variant, and each import line is replaced by the text it names. Only file names
 * are computed here: the WGSL text is the files', joined. The variant string is the cache key of
 * the composed text, of its shader module and of its pipelines (`shader.ts`).
 */
import { EngineError } from "../contract/errors.ts";

/** A shader variant: a file under `shaders/` (no `.wgsl`) and the parameters of its imports. */
export interface ShaderVariant {
  file: string;
  params: Readonly<Record<string, string>>;
}

const NAME = /^[a-z0-9_]+(?:\/[a-z0-9_]+)*$/;
const PARAM = /^[a-z0-9_]+$/;
const DIRECTIVE = /^[ \t]*\/\/!(.*)$/gm;
const IMPORT = /^\s*import\s+(\S+)\s*$/;
const PLACEHOLDER = /\{([^}]*)\}/g;

const bad = (variant: string, message: string, cause?: unknown) =>
  EngineError.invalidArgument(`shader ${variant}: ${message}`, cause);

/** The variant string of `file` with `params`: `file` alone, or `file:k=v,...` (keys sorted). */
export function shaderVariant(file: string, params: Readonly<Record<string, string>> = {}): string {
  const keys = Object.keys(params).sort();
  return keys.length === 0 ? file : `${file}:${keys.map((k) => `${k}=${params[k]}`).join(",")}`;
}

/** Parse a variant string (see {@linkcode shaderVariant}); malformed ones are invalid arguments. */
export function parseVariant(variant: string): ShaderVariant {
  const colon = variant.indexOf(":");
  const file = colon < 0 ? variant : variant.slice(0, colon);
  if (!NAME.test(file)) throw bad(variant, `${JSON.stringify(file)} is not a shader file name`);
  const params: Record<string, string> = {};
  if (colon >= 0) {
    for (const pair of variant.slice(colon + 1).split(",")) {
      const [key, value, extra] = pair.split("=");
      if (key === undefined || value === undefined || extra !== undefined) {
        throw bad(variant, `${JSON.stringify(pair)} is not key=value`);
      }
      if (!PARAM.test(key) || !PARAM.test(value)) {
        throw bad(variant, `parameter ${JSON.stringify(pair)}: names and values are [a-z0-9_]+`);
      }
      if (Object.hasOwn(params, key)) throw bad(variant, `parameter ${key} given twice`);
      params[key] = value;
    }
  }
  if (shaderVariant(file, params) !== variant) {
    throw bad(variant, `parameters must be sorted by name (${shaderVariant(file, params)})`);
  }
  return { file, params };
}

/** Reads `shaders/<path>` (`path` with `.wgsl`). */
export type ShaderFileLoader = (path: string) => Promise<string>;

/**
 * The WGSL of `variant`: its file with every `//! import` line replaced by the imported file's
 * own composed text (or, for a file already imported, by a comment saying so). Fails, naming the
 * variant and the importing file, on a missing file, an unknown directive or placeholder, and a
 * parameter no import uses.
 */
export async function composeShader(variant: string, load: ShaderFileLoader): Promise<string> {
  const { file, params } = parseVariant(variant);
  const used = new Set<string>();
  const seen = new Set<string>();
  const expand = async (name: string, from: string): Promise<string> => {
    seen.add(name);
    let text: string;
    try {
      text = await load(`${name}.wgsl`);
    } catch (e) {
      throw bad(variant, `cannot read shaders/${name}.wgsl${from}: ${(e as Error).message}`, e);
    }
    const parts: string[] = [];
    let last = 0;
    for (const m of text.matchAll(DIRECTIVE)) {
      const where = ` (line ${text.slice(0, m.index).split("\n").length} of ${name}.wgsl)`;
      const imp = IMPORT.exec(m[1]!);
      if (imp === null) {
        throw bad(variant, `unknown directive ${JSON.stringify(m[0].trim())}${where}`);
      }
      const target = imp[1]!.replace(PLACEHOLDER, (_, key: string) => {
        if (!Object.hasOwn(params, key)) throw bad(variant, `no parameter ${key}${where}`);
        used.add(key);
        return params[key]!;
      });
      if (!NAME.test(target)) throw bad(variant, `bad import ${JSON.stringify(target)}${where}`);
      parts.push(text.slice(last, m.index));
      if (seen.has(target)) {
        parts.push(`// ${target}.wgsl: already imported`);
      } else {
        const body = await expand(target, ` (imported by ${name}.wgsl)`);
        parts.push(`// ---- ${target}.wgsl ----\n${body.replace(/\n?$/, "\n")}// ---- end ----`);
      }
      last = m.index + m[0].length;
    }
    parts.push(text.slice(last));
    return parts.join("");
  };
  const out = await expand(file, "");
  const unused = Object.keys(params).filter((k) => !used.has(k));
  if (unused.length > 0) throw bad(variant, `parameter ${unused.join(", ")} is used by no import`);
  return out;
}
