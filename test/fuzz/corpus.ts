/**
 * The fuzz corpus: inputs that once failed or that stand for a class of refusal, one JSON line
 * each (`{"outcome", "note", "input"}`) in `test/fuzz/corpus/<name>.jsonl`, replayed on every run.
 * Bytes are written as `{"$utf8": text}` when they are UTF-8, else `{"$base64": ...}`; the rest of
 * an input is plain JSON (keys such as `__proto__` stay own keys).
 *
 * New findings of a run (a new library error class, a non-EngineError, a wrong kind) are appended
 * to `test/artifacts/fuzz/<name>.jsonl` in the same format, ready to be reviewed and copied in.
 */

/** One corpus entry. */
export interface CorpusEntry {
  /** What the input must give: an `outcomeLabel`. */
  outcome: string;
  /** Why the entry is there (what it once did, what it stands for). */
  note: string;
  /** The input, in the fuzzer's own form. */
  input: unknown;
}

const CORPUS_DIR = new URL("./corpus/", import.meta.url);
const FINDINGS_DIR = new URL("../artifacts/fuzz/", import.meta.url);

function base64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** `value` with every `Uint8Array` in it written as `{$utf8}` or `{$base64}`. */
export function toCorpusJson(value: unknown): unknown {
  if (value instanceof Uint8Array) {
    try {
      return { $utf8: utf8.decode(value) };
    } catch {
      return { $base64: base64(value) };
    }
  }
  if (Array.isArray(value)) return value.map(toCorpusJson);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toCorpusJson(v)]));
  }
  return value;
}

/** The inverse of {@linkcode toCorpusJson}. */
export function fromCorpusJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(fromCorpusJson);
  if (typeof value !== "object" || value === null) return value;
  const keys = Object.keys(value);
  const v = value as Record<string, unknown>;
  if (keys.length === 1 && typeof v.$utf8 === "string") return new TextEncoder().encode(v.$utf8);
  if (keys.length === 1 && typeof v.$base64 === "string") {
    return Uint8Array.from(atob(v.$base64), (c) => c.charCodeAt(0));
  }
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fromCorpusJson(x)]));
}

/** One corpus line for `input`. */
export function corpusLine(outcome: string, note: string, input: unknown): string {
  return JSON.stringify({ outcome, note, input: toCorpusJson(input) });
}

/** The entries of corpus `name` (none when the file does not exist). */
export async function readCorpus(name: string): Promise<CorpusEntry[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(new URL(`${name}.jsonl`, CORPUS_DIR));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
  return text.split("\n").filter((l) => l.trim() !== "").map((line, i) => {
    const e = JSON.parse(line) as CorpusEntry;
    if (typeof e.outcome !== "string" || typeof e.note !== "string" || !("input" in e)) {
      throw new Error(`corpus ${name}.jsonl line ${i + 1}: expected {outcome, note, input}`);
    }
    return { ...e, input: fromCorpusJson(e.input) };
  });
}

/** Append finding lines to `test/artifacts/fuzz/<name>.jsonl`; returns the file's path. */
export async function writeFindings(name: string, lines: readonly string[]): Promise<string> {
  await Deno.mkdir(FINDINGS_DIR, { recursive: true });
  const url = new URL(`${name}.jsonl`, FINDINGS_DIR);
  await Deno.writeTextFile(url, lines.map((l) => l + "\n").join(""), { append: true });
  return url.pathname;
}
