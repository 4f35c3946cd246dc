/** The usage text of a command line declared for `flags.ts`. */
import type { CliSpec, Flag, FlagTable } from "./flag_types.ts";

/** ` from min to max`, ` >= min`, ` <= max` or nothing. */
export function range(min?: number, max?: number): string {
  if (min !== undefined && max !== undefined) return ` from ${min} to ${max}`;
  if (min !== undefined) return ` >= ${min}`;
  if (max !== undefined) return ` <= ${max}`;
  return "";
}

/** The value's name in the usage text. */
function argName(f: Flag): string {
  if (f.type === "boolean") return "";
  if (f.arg !== undefined) return f.arg;
  switch (f.type) {
    case "integer":
      return "N";
    case "number":
      return "X";
    case "enum":
      return f.choices.join("|");
    case "list":
      return f.choices ? `${f.choices.join("|")},...` : "A,B,...";
    case "integers":
      return "N,N,...";
    default:
      return "VALUE";
  }
}

/** What the usage text says after a flag's help: its range and default. */
function details(f: Flag): string {
  const parts: string[] = [];
  if (f.type === "integer" || f.type === "number" || f.type === "integers") {
    const r = range(f.min, f.max).trim();
    if (r !== "") parts.push(r);
  }
  if (f.type !== "boolean") {
    if (f.required) parts.push("required");
    if (f.default !== undefined) {
      parts.push(`default ${Array.isArray(f.default) ? f.default.join(",") : f.default}`);
    }
  }
  return parts.length > 0 ? ` (${parts.join("; ")})` : "";
}

function table(rows: [string, string][]): string[] {
  const width = Math.min(32, Math.max(...rows.map(([l]) => l.length)));
  return rows.map(([l, r]) =>
    l.length > width ? `  ${l}\n  ${" ".repeat(width)}  ${r}` : `  ${l.padEnd(width)}  ${r}`
  );
}

/** The usage text of `spec`: the command, what it does, every flag and environment variable. */
export function usage<T extends FlagTable, E extends FlagTable>(spec: CliSpec<T, E>): string {
  const flagRows: [string, string][] = Object.entries(spec.flags).map(([name, f]) => [
    `--${name}${f.type === "boolean" ? "" : ` ${argName(f)}`}`,
    f.help + details(f),
  ]);
  flagRows.push(["-h, --help", "print this help and exit"]);
  const lines = [
    `usage: ${spec.command} [options]${spec.args ? ` ${spec.args.usage}` : ""}`,
    "",
    spec.about,
    "",
    ...(spec.args ? ["arguments:", ...table([[spec.args.usage, spec.args.help]]), ""] : []),
    "options:",
    ...table(flagRows),
  ];
  const env = Object.entries(spec.env ?? {});
  if (env.length > 0) {
    lines.push("", "environment:");
    lines.push(
      ...table(env.map(([name, f]) => [`${name}=${argName(f) || "1"}`, f.help + details(f)])),
    );
  }
  return lines.join("\n");
}
