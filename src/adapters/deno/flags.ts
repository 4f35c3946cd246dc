/**
 * Command-line flags of Kiln's Deno tools, parsed from a declared table: `node:util`'s
 * `parseArgs` (strict) reads the words, then each value is checked against its declared type.
 * An unknown flag, a flag given twice, a missing or bad value, a stray argument or a bad
 * environment value is an `InvalidArgument` naming it; {@linkcode runCli} turns that into the
 * usage text on stderr and exit code 2, and `--help` / `-h` into the usage on stdout and exit 0,
 * before the tool loads anything. Every tool calls `runCli` first, so it is also where the process
 * gets an `XDG_RUNTIME_DIR` when it has none (`runtime_dir.ts`), before any GPU adapter or Worker.
 */
import { parseArgs } from "node:util";
import { EngineError } from "../../contract/errors.ts";
import { range, usage } from "./flags_usage.ts";
import { ensureRuntimeDir } from "./runtime_dir.ts";
import type { CliSpec, Flag, FlagTable, FlagValues, ParsedCli } from "./flag_types.ts";

export { usage };
export type {
  Always,
  BooleanFlag,
  CliSpec,
  EnumFlag,
  Flag,
  FlagBase,
  FlagTable,
  FlagValue,
  FlagValues,
  IntegerFlag,
  IntegerListFlag,
  ListFlag,
  NumberFlag,
  ParsedCli,
  Ranged,
  StringFlag,
  Valued,
} from "./flag_types.ts";

const invalid = (message: string, cause?: unknown) => EngineError.invalidArgument(message, cause);

const INTEGER = /^[+-]?\d+$/;
/** Decimal only: not `0x10`, `Infinity` or blanks, which `Number()` would take. */
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

function checkNumber(what: string, raw: string, f: { min?: number; max?: number }, int: boolean) {
  const kind = int ? "an integer" : "a number";
  const v = Number(raw);
  const ok = int
    ? INTEGER.test(raw) && Number.isSafeInteger(v)
    : DECIMAL.test(raw) && Number.isFinite(v);
  if (!ok || (f.min !== undefined && v < f.min) || (f.max !== undefined && v > f.max)) {
    throw invalid(`${what}: expected ${kind}${range(f.min, f.max)}, got ${JSON.stringify(raw)}`);
  }
  return v;
}

function checkChoice(what: string, raw: string, choices: readonly string[]): string {
  if (!choices.includes(raw)) {
    throw invalid(`${what}: expected one of ${choices.join(", ")}, got ${JSON.stringify(raw)}`);
  }
  return raw;
}

function items(what: string, raw: string): string[] {
  const list = raw.split(",").map((s) => s.trim());
  if (list.some((s) => s === "")) {
    throw invalid(`${what}: expected comma-separated items, got ${JSON.stringify(raw)}`);
  }
  return list;
}

/**
 * `raw` as the value of flag `f`; `what` (`--port`, `KILN_SEED`) names it in the error.
 * A value that does not fit is `InvalidArgument`.
 */
export function flagValue(what: string, f: Flag, raw: string): unknown {
  switch (f.type) {
    case "boolean":
      if (raw === "" || raw === "1" || raw === "true") return true;
      if (raw === "0" || raw === "false") return false;
      throw invalid(`${what}: expected 1, 0, true or false, got ${JSON.stringify(raw)}`);
    case "string":
      if (raw === "") throw invalid(`${what}: expected a value, got an empty one`);
      return raw;
    case "integer":
      return checkNumber(what, raw, f, true);
    case "number":
      return checkNumber(what, raw, f, false);
    case "enum":
      return checkChoice(what, raw, f.choices);
    case "list":
      return items(what, raw).map((s) => f.choices ? checkChoice(what, s, f.choices) : s);
    case "integers":
      return items(what, raw).map((s) => checkNumber(what, s, f, true));
  }
}

function defaultOf(f: Flag): unknown {
  if (f.type === "boolean") return false;
  return Array.isArray(f.default) ? [...f.default] : f.default;
}

/** `parseArgs`'s own failures, as `InvalidArgument` with its message (which names the flag). */
function strictParse(argv: readonly string[], spec: CliSpec<FlagTable, FlagTable>) {
  const options: Record<string, { type: "string" | "boolean"; short?: string }> = {
    help: { type: "boolean", short: "h" },
  };
  for (const [name, f] of Object.entries(spec.flags)) {
    options[name] = { type: f.type === "boolean" ? "boolean" : "string" };
  }
  const config = {
    args: [...argv],
    options,
    allowPositionals: spec.args !== undefined,
    tokens: true as const,
  };
  try {
    return parseArgs({ ...config, strict: true });
  } catch (e) {
    // `--help` anywhere (even beside a bad flag) is a request for help.
    const loose = parseArgs({ ...config, strict: false, allowPositionals: true });
    if (loose.tokens.some((t) => t.kind === "option" && t.name === "help")) {
      return undefined;
    }
    const code = (e as { code?: string }).code;
    if (
      code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" || code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL"
    ) {
      // An unknown flag first, and named without the word after it: `--api-kye s3cret` must not
      // print the secret (parseArgs would complain about the stray "s3cret").
      const unknown = loose.tokens.find((t) => t.kind === "option" && !(t.name in options));
      if (unknown?.kind === "option") throw invalid(`unknown flag ${unknown.rawName}`, e);
      const stray = loose.tokens.find((t) => t.kind === "positional");
      if (!config.allowPositionals && stray !== undefined) {
        // Not echoed either: it may be a value whose flag was mistyped.
        throw invalid(`unexpected argument ${stray.index + 1}: this command takes only flags`, e);
      }
    }
    throw invalid((e as Error).message.replaceAll("\n", " "), e);
  }
}

/** An environment variable's text, undefined when unset, empty or not readable. */
function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name) || undefined;
  } catch {
    return undefined; // no --allow-env: as if unset
  }
}

/** The environment variables of `table`, checked like flags (empty or unset: the default). */
export function parseEnv<E extends FlagTable>(
  table: E,
  get: (name: string) => string | undefined = readEnv,
): FlagValues<E> {
  const out: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(table)) {
    const raw = get(name);
    out[name] = raw === undefined || raw === "" ? defaultOf(f) : flagValue(name, f, raw);
    if (out[name] === undefined && f.type !== "boolean" && f.required) {
      throw invalid(`${name} must be set`);
    }
  }
  return out as FlagValues<E>;
}

/**
 * Parse `argv` by `spec`: its values, or `"help"` when `--help` or `-h` was given. Anything
 * else wrong is `InvalidArgument` naming the flag, argument or variable.
 */
export function parseCli<
  const T extends FlagTable,
  const E extends FlagTable = Record<never, Flag>,
>(
  spec: CliSpec<T, E>,
  argv: readonly string[],
  getEnv: (name: string) => string | undefined = readEnv,
): ParsedCli<T, E> | "help" {
  const parsed = strictParse(argv, spec as CliSpec<FlagTable, FlagTable>);
  if (parsed === undefined || parsed.values.help === true) return "help";
  const seen = new Set<string>();
  for (const t of parsed.tokens) {
    if (t.kind !== "option") continue;
    if (seen.has(t.name)) throw invalid(`${t.rawName} given more than once`);
    seen.add(t.name);
  }
  const flags: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(spec.flags)) {
    const raw = parsed.values[name];
    if (raw === undefined) {
      if (f.type !== "boolean" && f.required) throw invalid(`--${name} is required`);
      flags[name] = defaultOf(f);
    } else flags[name] = typeof raw === "string" ? flagValue(`--${name}`, f, raw) : raw;
  }
  const args = parsed.positionals;
  const a = spec.args;
  if (a !== undefined && args.length < a.min) {
    throw invalid(`missing argument: ${a.usage}`);
  }
  if (a !== undefined && args.length > a.max) {
    throw invalid(
      `expected at most ${a.max} argument${a.max === 1 ? "" : "s"} (${a.usage}), got ${
        args.map((s) => JSON.stringify(s)).join(" ")
      }`,
    );
  }
  const env = parseEnv(spec.env ?? ({} as E), getEnv);
  return { flags: flags as FlagValues<T>, args, env };
}

/** {@linkcode ParsedCli} and a way out for checks only the tool can make. */
export interface Cli<T extends FlagTable, E extends FlagTable> extends ParsedCli<T, E> {
  /** Print `message` (it should name the flag) and the usage to stderr, and exit 2. */
  fail(message: string): never;
}

/**
 * The tool's command line (`Deno.args`) by `spec`. `--help` prints the usage and exits 0; a bad
 * command line prints what is wrong and the usage to stderr and exits 2. Gives the process an
 * `XDG_RUNTIME_DIR` when it has none (the GPU stack's message about it is noise).
 */
export function runCli<const T extends FlagTable, const E extends FlagTable = Record<never, Flag>>(
  spec: CliSpec<T, E>,
  argv: readonly string[] = Deno.args,
): Cli<T, E> {
  ensureRuntimeDir();
  const fail = (message: string): never => {
    console.error(`${spec.name}: ${message}\n\n${usage(spec)}`);
    Deno.exit(2);
  };
  let parsed: ParsedCli<T, E> | "help";
  try {
    parsed = parseCli(spec, argv);
  } catch (e) {
    if (e instanceof EngineError) fail(e.message);
    throw e;
  }
  if (parsed === "help") {
    console.log(usage(spec));
    Deno.exit(0);
  }
  return { ...parsed, fail };
}
