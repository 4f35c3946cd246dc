/**
 * Draw a bench result as an SVG bar chart: `deno run -A bench/chart.ts IN.json OUT.svg`.
 * Each row puts Kiln's number beside its peer's in the same run, labelled with the ratio:
 * `matmul` (GB/s against a read probe), `engine-decode` (tokens/s, pipelined against one
 * step at a time), `matvec-threads` (products/s, one thread per row against 64 with barriers)
 * `gemm-quant` (rows/s of quantized prefill products, the GEMM against matvec slices) and
 * `float-products` (rows/s of float products, the product family against the replaced kernel)
 * and `big-model-chromium` (MB/s of a 2 GB model's load from OPFS against a plain OPFS read).
 * A `kiln-bench` report (`deno task bench`) is drawn by `bench_chart.ts`.
 */
import { renderBenchChart } from "./engine/bench_chart.ts";
import type { BenchReport } from "./engine/report.ts";
import { runCli } from "../src/adapters/deno/flags.ts";

interface Pair {
  label: string;
  value: number;
  peer: number;
}

interface Chart {
  title: string;
  legend: string;
  rows: Pair[];
}

/** One upload way of `big-model-chromium`. */
interface Way {
  readSeconds: number;
  loadSeconds: number;
  uploadSeconds: number;
}

// deno-lint-ignore no-explicit-any
type Report = { bench: string; adapter: string; results: any[] };

function chart(report: Report): Chart {
  if (report.bench === "engine-decode") {
    const sync = report.results.filter((r) => r.mode === "one step at a time");
    const piped = report.results.filter((r) => r.mode === "pipelined");
    return {
      title: "engine decode: tokens/s, pipelined vs one step at a time",
      legend: "orange: pipelined (tokens stay on the GPU), grey: waits for every step's tokens",
      rows: piped.map((r, i) => ({
        label: `${r.streams} stream${r.streams === 1 ? "" : "s"}`,
        value: r.tokens_per_s,
        peer: sync[i].tokens_per_s,
      })),
    };
  }
  if (report.bench === "gemm-quant") {
    return {
      title: "quantized prefill products: activation rows per second, tiled GEMM vs matvec",
      legend: "orange: gemm_quant (decoded once per 32 rows), grey: matvec_quant (once per 8 rows)",
      rows: report.results.map((r) => ({
        label: `${r.type} ${r.n}×${r.k} m=${r.m}`,
        value: (1000 * r.m) / r.gemm_ms,
        peer: (1000 * r.m) / r.matvec_ms,
      })),
    };
  }
  if (report.bench === "float-products") {
    return {
      title: "float products: activation rows per second, product family vs replaced matvec",
      legend: "orange: F16/F32 as formats of matvec_quant / gemm_quant, grey: the old matvec.wgsl",
      rows: report.results.map((r) => ({
        label: `${r.dtype} ${r.n}×${r.k} m=${r.m}`,
        value: (1000 * r.m) / r.family_ms,
        peer: (1000 * r.m) / r.baseline_ms,
      })),
    };
  }
  if (report.bench === "big-model-chromium") {
    // One object of results: each upload way's weight stream and whole load, against a plain
    // read of the same OPFS file in the page just before it.
    const ways = (report.results as unknown as { opfsVsRead?: Record<string, Way> }).opfsVsRead;
    const mb = (report as unknown as { bytes: number }).bytes / 1e6;
    return {
      title: "a 2 GB GGUF from OPFS to the GPU in a tab: MB/s, Kiln vs a plain OPFS read",
      legend: "orange: openModel (weights alone; whole load with pipeline compilation), " +
        "grey: the same file read in the page",
      rows: Object.entries(ways ?? {}).flatMap(([way, v]) => [
        { label: `${way}: weights`, value: mb / v.uploadSeconds, peer: mb / v.readSeconds },
        { label: `${way}: whole load`, value: mb / v.loadSeconds, peer: mb / v.readSeconds },
      ]),
    };
  }
  if (report.bench === "speculative") {
    return {
      title: "speculative decoding: tokens/s per stream, on vs off",
      legend: "orange: speculation on (prompt lookup, or a draft model), grey: off " +
        "(same tokens, same run)",
      rows: report.results.map((r) => ({
        label: `${r.model} ${r.method === "draft_model" ? `draft ${r.draft_model}` : "lookup"} ` +
          `k=${r.k} ${r.workload}`,
        value: r.on_tokens_per_s / r.streams,
        peer: r.off_tokens_per_s / r.streams,
      })),
    };
  }
  if (report.bench === "matvec-threads") {
    return {
      title: `decode products per second on ${report.adapter}: one thread per row vs 32`,
      legend: "orange: one thread per output row, grey: 32 threads per row (workgroup barriers)",
      rows: report.results.map((r) => ({
        label: `${r.dtype} ${r.n}×${r.k}`,
        value: 1000 / r.thread_per_row_ms,
        peer: 1000 / r.barrier_ms,
      })),
    };
  }
  return {
    title: `${report.bench}: GB/s, kernel vs read probe`,
    legend: "orange: kernel, grey: peer (8 × 16-byte loads in flight per thread)",
    rows: report.results.map((r) => ({
      label: `${r.dtype} ${r.n}×${r.k}`,
      value: r.gb_per_s,
      peer: r.peer_read_probe_gb_per_s,
    })),
  };
}

const { args } = runCli({
  name: "chart",
  command: "deno run -A bench/chart.ts",
  about: "A bench result as an SVG bar chart, Kiln's number beside its peer's.",
  flags: {},
  args: {
    usage: "IN.json OUT.svg",
    min: 2,
    max: 2,
    help: "the report to read, the chart to write",
  },
});
const [input, output] = args as [string, string];
const parsed = JSON.parse(await Deno.readTextFile(input));
if (parsed.bench === "kiln-bench") {
  await Deno.writeTextFile(output, renderBenchChart(parsed as BenchReport));
  Deno.exit(0);
}
const report = parsed as Report;
const { title, legend, rows } = chart(report);
const max = Math.max(...rows.flatMap((r) => [r.value, r.peer]));
const barH = 14, gap = 12, top = 48;
const left = Math.max(150, 16 + 6.5 * Math.max(...rows.map((r) => r.label.length)));
const W = left + 610;
const fixed = (v: number) => v.toFixed(v < 100 ? 1 : 0);
const H = top + rows.length * (2 * barH + gap) + 30;
const x = (v: number) => ((W - left - 100) * v) / max;
const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;");
const parts = [
  `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
  `<rect width="100%" height="100%" fill="white"/>`,
  `<text x="10" y="20" font-size="14" font-weight="bold">${esc(title)}</text>`,
  `<text x="10" y="36" fill="#555">${esc(report.adapter)}</text>`,
];
rows.forEach((r, i) => {
  const y = top + i * (2 * barH + gap);
  parts.push(`<text x="10" y="${y + barH + 4}">${esc(r.label)}</text>`);
  parts.push(`<rect x="${left}" y="${y}" width="${x(r.value)}" height="${barH}" fill="#d9480f"/>`);
  parts.push(
    `<text x="${left + x(r.value) + 4}" y="${y + 11}">${fixed(r.value)} (×${
      (r.value / r.peer).toFixed(2)
    })</text>`,
  );
  parts.push(
    `<rect x="${left}" y="${y + barH}" width="${x(r.peer)}" height="${barH}" fill="#868e96"/>`,
  );
  parts.push(`<text x="${left + x(r.peer) + 4}" y="${y + barH + 11}">${fixed(r.peer)}</text>`);
});
parts.push(`<text x="10" y="${H - 10}" fill="#555">${esc(legend)}</text>`, "</svg>");
await Deno.writeTextFile(output, parts.join("\n") + "\n");
