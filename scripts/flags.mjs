// deno-lint-ignore-file explicit-module-boundary-types
// Flags of Kiln's Node scripts, parsed from a declared table by `node:util`'s `parseArgs`
// (strict), like the Deno tools' `src/adapters/deno/flags.ts` (a smaller set of types: string,
// integer with min/max, boolean). A bad command line (unknown flag, missing or bad value, a flag
// given twice, a stray argument) prints what is wrong and the usage to stderr and exits 2;
// `--help` / `-h` prints the usage and exits 0.
import { parseArgs } from "node:util";

/**
 * @typedef {{ type: "string", help: string, arg?: string, default?: string }
 *   | { type: "integer", help: string, arg?: string, min?: number, max?: number, default?: number }
 *   | { type: "boolean", help: string }} Flag
 * @typedef {{ name: string, command: string, about: string, flags: Record<string, Flag> }} Spec
 */

/** @param {Spec} spec */
export function usage(spec) {
  const rows = Object.entries(spec.flags).map(([name, f]) => {
    const arg = f.type === "boolean" ? "" : ` ${f.arg ?? (f.type === "integer" ? "N" : "VALUE")}`;
    const range = f.type === "integer" && (f.min !== undefined || f.max !== undefined)
      ? `${f.min ?? ""}-${f.max ?? ""}; `
      : "";
    const dflt = f.type !== "boolean" && f.default !== undefined ? `default ${f.default}` : "";
    const extra = range || dflt ? ` (${range}${dflt})`.replace("; )", ")") : "";
    return [`--${name}${arg}`, `${f.help}${extra}`];
  });
  rows.push(["-h, --help", "print this help and exit"]);
  const width = Math.max(...rows.map(([l]) => l.length));
  return [
    `usage: ${spec.command} [options]`,
    "",
    spec.about,
    "",
    "options:",
    ...rows.map(([l, r]) => `  ${l.padEnd(width)}  ${r}`),
  ].join("\n");
}

/**
 * The values of `argv` by `spec`, or an Error naming the flag; `"help"` for `--help`.
 * @param {Spec} spec
 * @param {readonly string[]} argv
 * @returns {Record<string, string | number | boolean | undefined> | "help"}
 */
export function parseFlags(spec, argv) {
  /** @type {Record<string, { type: "string" | "boolean", short?: string }>} */
  const options = { help: { type: "boolean", short: "h" } };
  for (const [name, f] of Object.entries(spec.flags)) {
    options[name] = { type: f.type === "boolean" ? "boolean" : "string" };
  }
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options, strict: true, tokens: true });
  } catch (e) {
    const loose = parseArgs({ args: [...argv], options, strict: false, tokens: true });
    if (loose.tokens.some((t) => t.kind === "option" && t.name === "help")) return "help";
    if (
      e.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" ||
      e.code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL"
    ) {
      // An unknown flag is named without the word after it (which may be a value).
      const unknown = loose.tokens.find((t) => t.kind === "option" && !(t.name in options));
      if (unknown?.kind === "option") throw new Error(`unknown flag ${unknown.rawName}`);
      const stray = loose.tokens.find((t) => t.kind === "positional");
      if (stray) throw new Error(`unexpected argument ${stray.index + 1}: this takes only flags`);
    }
    throw new Error(e.message.replaceAll("\n", " "));
  }
  if (parsed.values.help) return "help";
  const seen = new Set();
  for (const t of parsed.tokens) {
    if (t.kind !== "option") continue;
    if (seen.has(t.name)) throw new Error(`${t.rawName} given more than once`);
    seen.add(t.name);
  }
  /** @type {Record<string, string | number | boolean | undefined>} */
  const out = {};
  for (const [name, f] of Object.entries(spec.flags)) {
    const raw = parsed.values[name];
    if (f.type === "boolean") out[name] = raw === true;
    else if (raw === undefined) out[name] = f.default;
    else if (raw === "") throw new Error(`--${name}: expected a value, got an empty one`);
    else if (f.type === "string") out[name] = raw;
    else {
      const v = Number(raw);
      const ok = /^[+-]?\d+$/.test(String(raw)) && Number.isSafeInteger(v) &&
        (f.min === undefined || v >= f.min) && (f.max === undefined || v <= f.max);
      if (!ok) {
        const range = f.min !== undefined && f.max !== undefined
          ? ` from ${f.min} to ${f.max}`
          : f.min !== undefined
          ? ` >= ${f.min}`
          : "";
        throw new Error(`--${name}: expected an integer${range}, got ${JSON.stringify(raw)}`);
      }
      out[name] = v;
    }
  }
  return out;
}

/**
 * The script's command line (`process.argv`) by `spec`: exits 0 after `--help`, 2 on a bad one.
 * @param {Spec} spec
 */
export function runFlags(spec, argv = process.argv.slice(2)) {
  let values;
  try {
    values = parseFlags(spec, argv);
  } catch (e) {
    console.error(`${spec.name}: ${e.message}\n\n${usage(spec)}`);
    process.exit(2);
  }
  if (values === "help") {
    console.log(usage(spec));
    process.exit(0);
  }
  return values;
}
