/**
 * The JSON `deno task bench` writes (`bench: "kiln-bench"`) and the table it prints.
 */
import type { EncodeTiming, WeightBytes } from "./forward_stats.ts";
import type { PeerReport } from "./peer_report.ts";
import type { FmaProbeResult, ProbeResult } from "../probes/probe.ts";
import type { MachineCheck } from "./machine_load.ts";
import { publishable, withheldBecause } from "./guard.ts";
import { describeSweep } from "./threads.ts";
import type { GuidedResult } from "./guided_cost.ts";
import type { ContextResult } from "./contexts.ts";

export interface DecodeResult {
  batch: number;
  /** Tokens each stream generated. */
  tokens_per_stream: number;
  /** Tokens after each stream's first (which comes out of prefill), over `seconds`. */
  timed_tokens: number;
  /** From the first generated token (any stream) to the last. */
  seconds: number;
  tokens_per_s: number;
  max_steps_in_flight: number;
}

export interface PrefillResult {
  prompt_tokens: number;
  /** Median time to first token over `runs` (one request, `max_tokens: 1`). */
  ttft_s: number;
  tokens_per_s: number;
  runs: number;
  ttft_s_all: number[];
  /** The decoder layers' product FLOP/s (`flops.ts`; absent for MoE shapes). */
  gflop_per_s?: number;
  /** Those over the FMA probe's of the same run. */
  fraction_of_fma?: number;
}

export interface ShapeResult {
  shape: string;
  model_dir: string;
  /** SHA-256 of `model.safetensors` when it is a generated checkpoint. */
  checkpoint_sha256?: string;
  params?: number;
  weight_bytes?: WeightBytes;
  engine?: {
    max_num_batched_tokens: number;
    max_num_seqs: number;
    kv_cache_positions: number;
    kv_cache_block_size: number;
    context_length: number;
    load_seconds: number;
  };
  decode?: DecodeResult[];
  /** JSON Schema compile times and guided against free decode (`guided_cost.ts`). */
  guided?: GuidedResult | undefined;
  prefill?: PrefillResult[];
  /** Decode at each `--contexts` length (`contexts.ts`). */
  contexts?: ContextResult[];
  /** Dispatches and CPU encode time of one decode step, per batch size. */
  step?: EncodeTiming[];
  /** Weight bytes one batch-1 decode step reads ÷ its time, beside the read probe. */
  weight_reads?: {
    bytes_per_step: number;
    step_seconds: number;
    gb_per_s: number;
    probe_gb_per_s: number;
    ratio_to_probe: number;
  };
  peers?: PeerReport[];
  /**
   * The shape's first `layers` decoder layers of `of`, every width and expert as in the shape
   * (`bench --layers`); `weights`: "f16" or the GGUF mix.
   */
  slice?: { shape: string; layers: number; of: number; weights: string };
  /** Other processes' share of the CPU and the load average while the peers were timed. */
  peer_machine?: MachineCheck;
  skipped: string[];
  error?: string;
}

export interface BenchReport {
  bench: "kiln-bench";
  adapter: string;
  date: string;
  runtime_data: Record<string, unknown>;
  deno: string;
  options: Record<string, unknown>;
  /** The machine: hardware threads and 1-minute load average when the run began and ended. */
  machine?: { cores: number; loadavg_1m_start: number | null; loadavg_1m_end: number | null };
  probe: ProbeResult;
  /** f32 FLOP/s of the FMA probe, the peer of prefill's (`probe.ts`). */
  fma_probe?: FmaProbeResult;
  shapes: ShapeResult[];
  /** Time per layer of shapes run at two or more `--layers` depths (`slices.ts`). */
  slices?: SliceFit[];
}

/** One engine's line over the depths of one sliced shape. */
export interface EngineFit {
  name: string;
  /** Seconds per batch-1 decode step at each depth (1 ÷ the median tokens/s over rounds). */
  step_s: number[];
  per_layer_s: number;
  fixed_s: number;
  /**
   * `1 / (fixed_s + of × per_layer_s)`: extrapolated, not measured; null when the line does not
   * rise (a layer's cost lost in the noise), with `note` saying so.
   */
  full_depth_tokens_per_s_estimate: number | null;
  note?: string;
}

/** Every engine timed (`slices.ts` fits the lines) at every depth of one shape and weight type. */
export interface SliceFit {
  shape: string;
  weights: string;
  of: number;
  layers: number[];
  engines: EngineFit[];
  method: string;
}

const f = (x: number | undefined, digits = 1) =>
  x === undefined || !Number.isFinite(x) ? "-" : x.toFixed(digits);

/** The summary table, one block per shape. */
export function formatTable(r: BenchReport): string {
  const lines = [
    `Kiln bench on ${r.adapter} (${r.date})`,
    `read probe: ${f(r.probe.gb_per_s, 2)} GB/s over ${
      r.probe.bytes / 2 ** 20
    } MiB (${r.probe.timer})`,
    ...(r.fma_probe
      ? [`FMA probe: ${f(r.fma_probe.gflop_per_s, 1)} GFLOP/s f32 (${r.fma_probe.timer})`]
      : []),
  ];
  for (const s of r.shapes) {
    lines.push("", `${s.shape} (${s.model_dir})`);
    if (s.slice) {
      lines.push(
        `  slice: the first ${s.slice.layers} of ${s.slice.shape}'s ${s.slice.of} layers, ` +
          `every width and expert kept (${s.slice.weights})`,
      );
    }
    if (s.error) lines.push(`  error: ${s.error}`);
    for (const d of s.decode ?? []) {
      lines.push(
        `  decode  batch ${String(d.batch).padStart(3)}: ${
          f(d.tokens_per_s, 2).padStart(10)
        } tokens/s` +
          `  (${d.timed_tokens} tokens in ${
            f(d.seconds, 2)
          } s, up to ${d.max_steps_in_flight} steps in flight)`,
      );
    }
    for (const p of s.prefill ?? []) {
      lines.push(
        `  prefill ${String(p.prompt_tokens).padStart(5)} tokens: ${
          f(p.tokens_per_s, 1).padStart(8)
        } tokens/s` +
          `  TTFT ${
            f(p.ttft_s, 3)
          } s (median of ${p.runs}; chunks of ${s.engine?.max_num_batched_tokens})` +
          (p.fraction_of_fma === undefined
            ? ""
            : `; ${f(p.gflop_per_s, 2)} GFLOP/s = ${
              f(100 * p.fraction_of_fma, 1)
            }% of the FMA probe`),
      );
    }
    for (const c of s.contexts ?? []) {
      lines.push(
        `  context ${String(c.context).padStart(5)}: ${
          f(c.tokens_per_s, 2).padStart(10)
        } tokens/s` +
          ` = ×${f(c.ratio_to_shortest, 2)} of the shortest  (${c.prompt_tokens}-token prompt, ` +
          `TTFT ${f(c.ttft_s, 2)} s)`,
      );
    }
    for (const t of s.step ?? []) {
      lines.push(
        `  step    batch ${String(t.batch).padStart(3)}: ${t.dispatches} dispatches, encode ` +
          `${f(t.encode_ms_median, 3)} ms CPU (p10 ${f(t.encode_ms_p10, 3)}, p90 ${
            f(t.encode_ms_p90, 3)
          })`,
      );
    }
    const w = s.weight_reads;
    if (w) {
      lines.push(
        `  weights ${(w.bytes_per_step / 1e6).toFixed(0)} MB/step at batch 1: ${
          f(w.gb_per_s, 2)
        } GB/s` +
          ` = ${f(w.ratio_to_probe, 2)} × the read probe's ${f(w.probe_gb_per_s, 2)} GB/s`,
      );
    }
    if (s.guided) lines.push(...guidedLines(s.guided));
    for (const p of s.peers ?? []) lines.push(...peerLines(p));
    for (const k of s.skipped) lines.push(`  skipped: ${k}`);
  }
  for (const fit of r.slices ?? []) {
    lines.push(
      "",
      `${fit.shape} (${fit.weights}) per layer, from depths ${fit.layers.join(", ")}:`,
    );
    for (const e of fit.engines) {
      if (e.full_depth_tokens_per_s_estimate === null) {
        const steps = e.step_s.map((x) => f(x * 1000, 0)).join(", ");
        lines.push(`  ${e.name}: ${steps} ms per step: ${e.note}`);
        continue;
      }
      lines.push(
        `  ${e.name}: ${f(e.per_layer_s * 1000, 1)} ms per layer + ${f(e.fixed_s * 1000, 1)} ms; ` +
          `all ${fit.of} layers: ${
            f(e.full_depth_tokens_per_s_estimate, 2)
          } tokens/s (extrapolated)`,
      );
    }
  }
  return lines.join("\n");
}

/** Guided against free decode per batch, and the 50-property schema's compile times. */
function guidedLines(g: GuidedResult): string[] {
  const c = g.compile;
  return [
    ...g.decode.map((d) =>
      `  guided  batch ${String(d.batch).padStart(3)}: ${f(d.guided_tps, 2)} tokens/s against ` +
      `${f(d.free_tps, 2)} free = ×${f(d.ratio, 2)}; free at pipeline depth 1 ` +
      `${f(d.free_depth1_tps, 2)} (×${f(d.ratio_to_depth1, 2)}); guided without forced ` +
      `stretches ${f(d.guided_unforced_tps, 2)} (×${f(d.ratio_unforced, 2)} of free)`
    ),
    `  guided  ${c.properties}-property schema: first compile ${f(c.first_ms, 0)} ms` +
    `${c.xgrammar_loaded_before ? "" : " (XGrammar loaded)"}, another ${f(c.second_ms, 0)} ms, ` +
    `cached ${f(c.cache_hit_ms, 2)} ms`,
  ];
}

/** A peer's status, its ratios only when the guard passed, and its thread choices. */
function peerLines(p: PeerReport): string[] {
  const ratios = (p.decode ?? []).map((d) => `batch ${d.batch} ×${f(d.kiln_over_peer, 2)}`);
  const pre = (p.prefill ?? []).map((d) => `prefill ${d.prompt_tokens} ×${f(d.kiln_over_peer, 2)}`);
  const timed = ratios.length + pre.length > 0;
  const shown = timed && publishable(p) ? `; Kiln ÷ peer: ${[...ratios, ...pre].join(", ")}` : "";
  const lines = [`  peer ${p.name}: ${p.status}${p.reason ? ` (${p.reason})` : ""}${shown}`];
  for (const d of p.decode ?? []) {
    if (d.threads) lines.push(`    batch ${d.batch} decode: ${describeSweep(d.threads)}`);
  }
  for (const d of p.prefill ?? []) {
    if (d.threads) lines.push(`    prefill ${d.prompt_tokens}: ${describeSweep(d.threads)}`);
  }
  if (timed && !publishable(p)) {
    lines.push(`    Kiln ÷ peer withheld: ${withheldBecause(p).join("; ")}`);
  }
  for (const n of p.notes ?? []) lines.push(`    note: ${n}`);
  return lines;
}
