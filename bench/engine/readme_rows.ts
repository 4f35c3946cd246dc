/**
 * docs/benchmarks.md's peer tables from `deno task bench --peers` results: one row per shape, Kiln's
 * decode tokens/s and Kiln ÷ each peer at each batch size, then notes: each CPU peer's thread
 * count and the counts it tried, and every ratio withheld with the guard's reasons (a run from
 * before the guard has none, and so publishes no ratio).
 *
 *   deno run -A bench/engine/readme_rows.ts bench/results/bench-fortune-peers-lavapipe.json [more.json]
 */
import type { BenchReport } from "./report.ts";
import type { PeerReport } from "./peer_report.ts";
import { publishable, withheldBecause } from "./guard.ts";
import { describeSweep } from "./threads.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";

/** `3.9×`, `25×`, `0.17×`. */
export function ratioText(x: number): string {
  if (!Number.isFinite(x)) return "-";
  return `${x.toFixed(x >= 20 ? 0 : x >= 1 ? 1 : 2)}×`;
}

const tps = (x: number) => x.toFixed(x >= 100 ? 0 : x >= 10 ? 0 : 1);

/** The cell for one peer on one shape. */
function cell(p: PeerReport | undefined): string {
  if (!p) return "not run";
  if (!p.decode || p.decode.length === 0) return p.status === "ok" ? "not timed" : p.status;
  if (!publishable(p)) return "withheld (see below)";
  return p.decode.map((d) => ratioText(d.kiln_over_peer)).join(" / ");
}

/** Markdown: the table and its notes, for the reports given (in order). */
export function readmeRows(reports: readonly BenchReport[]): string {
  const shapes = reports.flatMap((r) => r.shapes.filter((s) => !s.error));
  const names = [...new Set(shapes.flatMap((s) => (s.peers ?? []).map((p) => p.name)))];
  const batches = (s: (typeof shapes)[number]) => (s.decode ?? []).map((d) => d.batch).join(" / ");
  const header = ["model", "Kiln decode, tok/s", ...names.map((n) => `÷ ${n}`)];
  const rows = shapes.map((s) => [
    `${s.shape} (batch ${batches(s)})`,
    (s.decode ?? []).map((d) => tps(d.tokens_per_s)).join(" / "),
    ...names.map((n) => cell(s.peers?.find((p) => p.name === n))),
  ]);
  const line = (xs: string[]) => `| ${xs.join(" | ")} |`;
  const out = [line(header), line(header.map(() => "---")), ...rows.map(line)];
  const notes: string[] = [];
  for (const s of shapes) {
    for (const p of s.peers ?? []) {
      for (const d of p.decode ?? []) {
        if (d.threads) {
          notes.push(`${s.shape}, ${p.name}, batch ${d.batch}: ${describeSweep(d.threads)}.`);
        }
      }
      if (p.decode && p.decode.length > 0 && !publishable(p)) {
        notes.push(`${s.shape}, ${p.name}: ratio withheld: ${withheldBecause(p).join("; ")}.`);
      } else if (p.status !== "ok") {
        notes.push(`${s.shape}, ${p.name}: ${p.status}${p.reason ? `: ${p.reason}` : ""}.`);
      }
      for (const n of p.notes ?? []) notes.push(`${s.shape}, ${p.name}: ${n}.`);
    }
  }
  if (notes.length > 0) out.push("", ...notes.map((n) => `- ${n}`));
  return out.join("\n");
}

if (import.meta.main) {
  const { args } = runCli({
    name: "readme_rows",
    command: "deno run -A bench/engine/readme_rows.ts",
    about:
      "docs/benchmarks.md's benchmark rows from results files; a withheld comparison prints no ratio.",
    flags: {},
    args: { usage: "RESULTS.json...", min: 1, max: Infinity, help: "bench results to read" },
  });
  const reports = await Promise.all(
    args.map(async (f) => JSON.parse(await Deno.readTextFile(f)) as BenchReport),
  );
  console.log(readmeRows(reports));
}
