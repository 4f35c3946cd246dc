/**
 * Issue 25's goals read from the runs of `gpu_table.ts` (each a `deno task bench` report, or
 * `deno task bench:spec`'s for speculative decoding): every
 * goal gets its measured value, or null and why not (not run, failed, timed out, not built).
 * Goals stated for the GPU machine (`gpu: true`) are reported on any adapter but judged only on a
 * GPU; the others are stated as ratios on lavapipe and judged everywhere. Also the SVG of it.
 *
 * @module
 */
import type { BenchReport, ShapeResult } from "./report.ts";

/** One row of `deno task bench:spec`'s report (`speculative.ts`). */
export interface SpecRow {
  model: string;
  workload: string;
  k: number;
  streams: number;
  speedup: number;
  identical: boolean;
  acceptance: number;
}

/** One run of the table: what it ran, and its report or why there is none. */
export interface TableRun {
  name: string;
  args: string[];
  seconds: number;
  /** A `deno task bench` report. */
  report?: BenchReport;
  /** A `deno task bench:spec` report. */
  spec?: { bench: "speculative"; adapter: string; results: SpecRow[] };
  error?: string;
}

/** A goal, its measured value and whether it is met (null: not measured, or not judged here). */
export interface GoalResult {
  goal: string;
  /** The value it asks for, at least. */
  target: number;
  unit: string;
  /** Stated for the GPU machine (absolute figures). */
  gpu: boolean;
  value: number | null;
  met: boolean | null;
  /** Where the value comes from, or why there is none. */
  note: string;
}

/** The H100's read bandwidth with 8 16-byte loads in flight per thread (the brief's figure). */
export const H100_READ_GB_PER_S = 2770;

const shapeOf = (runs: TableRun[], run: string, shape?: (s: ShapeResult) => boolean) => {
  const r = runs.find((x) => x.name === run);
  if (!r) return { why: `run ${run} not in this table` };
  if (!r.report) return { why: `run ${run}: ${r.error ?? "no report"}` };
  const s = r.report.shapes.find((x) => !x.error && (shape?.(x) ?? true));
  if (!s) return { why: `run ${run}: ${r.report.shapes.map((x) => x.error).join("; ")}` };
  return { s, report: r.report };
};

/** Issue 25's goals against `runs` on an adapter that is (`onGpu`) or is not a GPU. */
export function evaluateGoals(runs: TableRun[], onGpu: boolean): GoalResult[] {
  const out: GoalResult[] = [];
  const add = (
    goal: string,
    target: number,
    unit: string,
    gpu: boolean,
    read: () => { value?: number; note: string },
  ) => {
    let v: { value?: number; note: string };
    try {
      v = read();
    } catch (e) {
      v = { note: (e as Error).message };
    }
    const value = v.value ?? null;
    const judged = value !== null && (!gpu || onGpu);
    out.push({
      goal,
      target,
      unit,
      gpu,
      value,
      met: judged ? value >= target : null,
      note: v.note,
    });
  };
  const f16 = () => shapeOf(runs, "135m-f16");
  add("135M f16 decode, batch 1", 1000, "tokens/s", true, () => {
    const x = f16();
    const d = x.s?.decode?.find((d) => d.batch === 1);
    return d ? { value: d.tokens_per_s, note: "135m-f16" } : { note: x.why ?? "no batch 1" };
  });
  add("135M f16 decode, batch 32", 15000, "tokens/s", true, () => {
    const x = f16();
    const d = x.s?.decode?.find((d) => d.batch === 32);
    return d ? { value: d.tokens_per_s, note: "135m-f16" } : { note: x.why ?? "no batch 32" };
  });
  add("135M f16 prefill 512", 30000, "tokens/s", true, () => {
    const x = f16();
    const p = x.s?.prefill?.find((p) => p.prompt_tokens === 512);
    return p ? { value: p.tokens_per_s, note: "135m-f16" } : { note: x.why ?? "no 512 prefill" };
  });
  add("1B f16 decode weight reads, of 2.77 TB/s", 0.6, "fraction", true, () => {
    const x = shapeOf(runs, "1b-f16");
    const w = x.s?.weight_reads;
    return w
      ? {
        value: w.gb_per_s / H100_READ_GB_PER_S,
        note: `${w.gb_per_s.toFixed(0)} GB/s; ${w.ratio_to_probe.toFixed(2)}× this run's probe`,
      }
      : { note: x.why ?? "no batch-1 weight reads" };
  });
  add("prefill 512 GEMM vs FMA probe (135M f16)", 0.5, "fraction", false, () => {
    const x = f16();
    const p = x.s?.prefill?.find((p) => p.prompt_tokens >= 512 && p.fraction_of_fma !== undefined);
    return p
      ? { value: p.fraction_of_fma!, note: `prefill ${p.prompt_tokens}, decoder products only` }
      : { note: x.why ?? "needs a prefill of 512 tokens or more" };
  });
  add("decode at 8k context vs at 128 (135M)", 0.6, "ratio", false, () => {
    const x = f16();
    const c = x.s?.contexts;
    const last = c?.[c.length - 1];
    if (!c || !last || c.length < 2 || last.context < 8192 || c[0]!.context > 128) {
      return { note: x.why ?? "needs contexts from 128 or less to 8192 or more" };
    }
    return {
      value: last.ratio_to_shortest,
      note: `context ${last.prompt_tokens} vs ${c[0]!.prompt_tokens}`,
    };
  });
  add("prefill 512 Q4_K_M vs llama.cpp Vulkan", 2, "ratio", false, () => {
    const x = shapeOf(runs, "peers");
    const p = x.s?.peers?.find((p) => /vulkan/i.test(p.name));
    const r = p?.prefill?.find((d) => d.prompt_tokens === 512)?.kiln_over_peer;
    return r !== undefined ? { value: r, note: p!.name } : { note: x.why ?? "no Vulkan peer" };
  });
  add("speculative (prompt lookup), repetitive prompt", 1.8, "ratio", false, () => {
    const r = runs.find((x) => x.name === "spec");
    if (!r) return { note: "run spec not in this table" };
    if (!r.spec) return { note: `run spec: ${r.error ?? "no report"}` };
    const row = r.spec.results.find((x) =>
      x.streams === 1 && /^repetitive, greedy/.test(x.workload)
    );
    if (!row) return { note: "run spec: no one-stream repetitive greedy row" };
    if (!row.identical) throw new Error(`${row.model} ${row.workload}: tokens differ`);
    return {
      value: row.speedup,
      note: `${row.model}, k=${row.k}, ${(100 * row.acceptance).toFixed(0)} % of drafts accepted`,
    };
  });
  return out;
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;");

/** Each goal as a bar of value ÷ target (full width at twice the target), met or not. */
export function renderGoals(adapter: string, goals: GoalResult[]): string {
  const W = 860, rowH = 24, top = 52, left = 330, width = 380;
  const H = top + goals.length * rowH + 30;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">issue 25's goals: measured ÷ goal</text>`,
    `<text x="10" y="38" fill="#555">${esc(adapter)}</text>`,
    `<line x1="${left + width / 2}" y1="${top - 6}" x2="${left + width / 2}" y2="${
      H - 26
    }" stroke="#333" stroke-dasharray="3,3"/>`,
  ];
  goals.forEach((g, i) => {
    const y = top + i * rowH;
    parts.push(`<text x="10" y="${y + 12}">${esc(g.goal)}</text>`);
    if (g.value === null) {
      parts.push(`<text x="${left}" y="${y + 12}" fill="#888">${esc(g.note)}</text>`);
      return;
    }
    const r = g.value / g.target;
    const fill = g.met === null ? "#868e96" : g.met ? "#2b8a3e" : "#d9480f";
    parts.push(
      `<rect x="${left}" y="${y + 2}" width="${
        (Math.min(r, 2) * width) / 2
      }" height="14" fill="${fill}"/>`,
      `<text x="${left + width + 8}" y="${y + 12}">${r.toFixed(2)}× (${
        g.value.toPrecision(3)
      } ${g.unit})</text>`,
    );
  });
  parts.push(
    `<text x="10" y="${
      H - 10
    }" fill="#555">green: met, orange: not met, grey: a GPU goal not judged ` +
      `on this adapter; the dashed line is the goal</text>`,
    "</svg>",
  );
  return parts.join("\n") + "\n";
}
