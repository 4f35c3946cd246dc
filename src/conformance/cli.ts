/**
 * `deno task conformance --engine <name> [--model DIR] [--json]`: run the conformance kit and
 * print one line per check. Exit 0 when every check passes, 1 on a failure, 2 on bad usage.
 */
import { engineFactory, engineNames } from "./engines.ts";
import { formatReport, runConformanceReport } from "./kit.ts";
import "../adapters/deno/engines.ts";

function parseArgs(args: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith("--")) continue;
    const eq = a.indexOf("=");
    if (eq > 0) out[a.slice(2, eq)] = a.slice(eq + 1);
    else if (args[i + 1] !== undefined && !args[i + 1]!.startsWith("--")) {
      out[a.slice(2)] = args[++i]!;
    } else out[a.slice(2)] = "true";
  }
  return out;
}

const args = parseArgs(Deno.args);
const name = args.engine;
const factory = name === undefined ? undefined : await engineFactory(name, args);
if (factory === undefined) {
  console.error(`usage: deno task conformance --engine <name> [--model DIR] [--json]`);
  console.error(`engines: ${engineNames().join(", ")}`);
  if (name !== undefined) console.error(`unknown engine: ${name}`);
  Deno.exit(2);
}
const report = await runConformanceReport(factory);
console.log(args.json === "true" ? JSON.stringify(report) : formatReport(report));
Deno.exit(report.passed ? 0 : 1);
