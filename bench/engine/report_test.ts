import { ok, strictEqual as equal } from "node:assert/strict";
import { renderBenchChart } from "./bench_chart.ts";
import { adapterSlug } from "../lib/adapter_slug.ts";
import { type BenchReport, formatTable } from "./report.ts";

const report: BenchReport = {
  bench: "kiln-bench",
  adapter: "nvidia / hopper / NVIDIA H100 80GB HBM3",
  date: "2026-11-23T10:00:00.000Z",
  runtime_data: {},
  deno: "2.9.6",
  options: {},
  probe: {
    bytes: 2 ** 30,
    dispatches: 10,
    seconds_per_dispatch: 4e-4,
    gb_per_s: 2684,
    timer: "timestamp",
  },
  shapes: [
    {
      shape: "smollm2-135m",
      model_dir: "/x",
      skipped: [],
      engine: {
        max_num_batched_tokens: 256,
        max_num_seqs: 32,
        kv_cache_positions: 4608,
        kv_cache_block_size: 16,
        context_length: 8192,
        load_seconds: 1,
      },
      decode: [1, 8].map((batch) => ({
        batch,
        tokens_per_stream: 128,
        timed_tokens: 127 * batch,
        seconds: 1,
        tokens_per_s: 127 * batch,
        max_steps_in_flight: 4,
      })),
      prefill: [{
        prompt_tokens: 512,
        ttft_s: 0.05,
        tokens_per_s: 10240,
        runs: 3,
        ttft_s_all: [],
        gflop_per_s: 2170,
        fraction_of_fma: 0.217,
      }],
      contexts: [[128, 1], [8175, 0.55]].map(([context, ratio]) => ({
        context: context!,
        prompt_tokens: context!,
        timed_tokens: 15,
        seconds: 1,
        tokens_per_s: 100 * ratio!,
        ratio_to_shortest: ratio!,
        ttft_s: 1,
      })),
      step: [{
        batch: 1,
        dispatches: 514,
        encode_ms_median: 0.3,
        encode_ms_p10: 0.2,
        encode_ms_p90: 0.5,
        iterations: 200,
      }],
      weight_reads: {
        bytes_per_step: 269e6,
        step_seconds: 1 / 127,
        gb_per_s: 34.2,
        probe_gb_per_s: 2684,
        ratio_to_probe: 34.2 / 2684,
      },
      peers: [
        {
          name: "other",
          status: "ok",
          decode: [{ batch: 1, tokens_per_s: [{ kiln: 127, peer: 254 }], kiln_over_peer: 0.5 }],
          publishable: true,
        },
        { name: "away", status: "unavailable", reason: "not installed" },
        {
          name: "cpu",
          status: "ok",
          decode: [{
            batch: 1,
            tokens_per_s: [{ kiln: 127, peer: 5 }],
            kiln_over_peer: 25.4,
            threads: {
              chosen: 1,
              tried: [{ threads: 1, tokens_per_s: [680] }, { threads: 2, tokens_per_s: [1.5] }],
            },
          }],
          publishable: false,
          withheld: ["batch 1 decode: timed at 5 tok/s with 1 threads: starved"],
        },
        {
          name: "old",
          status: "ok",
          decode: [{ batch: 1, tokens_per_s: [{ kiln: 127, peer: 3 }], kiln_over_peer: 42.3 }],
        },
      ],
    },
    { shape: "llama-3.2-1b", model_dir: "/y", skipped: [], error: "too big <here>" },
  ],
};

Deno.test("the adapter's short name", () => {
  equal(adapterSlug("65541 / llvmpipe (LLVM 15.0.6, 256 bits)"), "lavapipe");
  equal(adapterSlug(report.adapter), "h100");
  equal(adapterSlug("Google / SwiftShader Device (Subzero)"), "swiftshader");
  equal(adapterSlug("amd / rdna-3 / Radeon RX 7900 XTX"), "radeon-rx-7900-xtx");
  equal(adapterSlug(""), "unknown");
});

Deno.test("the chart draws every measured number, escapes text, and names failed shapes", () => {
  const svg = renderBenchChart(report);
  ok(svg.startsWith("<svg") && svg.trimEnd().endsWith("</svg>"));
  for (
    const s of [
      "smollm2-135m ×1",
      "smollm2-135m ×8",
      "smollm2-135m 512",
      "×0.50",
      "1016 tokens/s",
      "smollm2-135m ctx 8175",
      "55.00 tokens/s (×0.55)",
    ]
  ) {
    ok(svg.includes(s), s);
  }
  ok(svg.includes("llama-3.2-1b: not measured: too big &lt;here&gt;") && !svg.includes("<here>"));
  // One bar per decode, prefill, context, weight-read pair and publishable peer ratio, and the
  // background.
  equal(svg.match(/<rect /g)!.length, 1 + 2 + 1 + 2 + 2 + 1);
});

Deno.test("the chart leaves out withheld ratios and captions thread choices and why", () => {
  const svg = renderBenchChart(report);
  ok(!svg.includes("×25.40") && !svg.includes("×42.30"), "no withheld ratio is drawn");
  for (
    const s of [
      "smollm2-135m cpu, batch 1: 1 thread (tried 1: 680, 2: 1.50 tok/s)",
      "smollm2-135m cpu: Kiln ÷ peer withheld: batch 1 decode: timed at 5 tok/s",
      "smollm2-135m old: Kiln ÷ peer withheld: this run predates the starvation and load guard",
    ]
  ) {
    ok(svg.includes(s), s);
  }
});

Deno.test("the table names every shape, its error and each peer's status", () => {
  const t = formatTable(report);
  for (
    const s of [
      "514 dispatches",
      "TTFT 0.050 s",
      "2170.00 GFLOP/s = 21.7% of the FMA probe",
      "context  8175:      55.00 tokens/s = ×0.55 of the shortest",
      "error: too big <here>",
      "peer away: unavailable (not installed)",
      "batch 1 ×0.50",
      "batch 1 decode: 1 thread (tried 1: 680, 2: 1.50 tok/s)",
      "Kiln ÷ peer withheld: batch 1 decode: timed at 5 tok/s with 1 threads: starved",
      "Kiln ÷ peer withheld: this run predates the starvation and load guard",
    ]
  ) {
    ok(t.includes(s), s);
  }
  ok(!t.includes("×25.40") && !t.includes("×42.30"), "no withheld ratio is printed");
});
