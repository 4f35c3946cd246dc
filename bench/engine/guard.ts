/**
 * Whether a comparison of Kiln with a peer may be published. A ratio is withheld when the run
 * was disturbed (other processes took a share of the CPU while it was timed) or when the peer
 * was starved (it ran far below its own speed at its fewest threads). A thread count the
 * machine has cores for that collapses (ggml's threads spin at barriers, so two threads on two
 * cores fall to a few tok/s when anything else wants a core) is a sign the cores were not free:
 * it withholds the ratio where the others' CPU share could not be measured, and is kept as a
 * note where `/proc` measured that share and found it under the limit (the benchmark's own
 * processes then shared the cores, and the peer is timed at its best count all the same).
 * Thresholds are `GUARD`'s; every reason is a sentence for the JSON, the table and the chart.
 */
import type { PeerReport } from "./peer_report.ts";
import type { MachineCheck } from "./machine_load.ts";
import { bestRate, type ThreadSweep } from "./threads.ts";

/** The guard's thresholds. */
export const GUARD = {
  /** Others may use at most this share of the machine's CPU capacity in any timed window. */
  maxForeignCpuShare: 0.1,
  /** Where `/proc` is absent: the 1-minute load average at most this many per core. */
  maxLoadPerCore: 1,
  /** A peer's median timed rate must be at least this × its sweep rate at its fewest threads. */
  minTimedOverFewest: 0.5,
  /** Every tried count up to the core count must reach this × the fewest threads' rate. */
  minCountOverFewest: 0.25,
  /** Kiln ÷ peer over the rounds: the largest at most this × the smallest. */
  maxRoundSpread: 2,
} as const;

const pct = (x: number) => `${(100 * x).toFixed(0)}%`;
const rate = (x: number) => `${x.toFixed(x >= 100 ? 0 : x >= 10 ? 1 : 2)} tok/s`;

/** Why the machine made this comparison's timings untrustworthy (empty: it did not). */
export function machineReasons(m: MachineCheck): string[] {
  const measured = m.windows.filter((w) => w.foreign_cpu_share !== null);
  if (measured.length > 0) {
    return measured.filter((w) => w.foreign_cpu_share! > GUARD.maxForeignCpuShare).map((w) =>
      `other processes used ${pct(w.foreign_cpu_share!)} of the machine's CPU during ${w.label} ` +
      `(limit ${pct(GUARD.maxForeignCpuShare)})`
    );
  }
  const loads = [m.loadavg_1m_before, ...m.windows.map((w) => w.loadavg_1m)]
    .filter((l): l is number => l !== null);
  if (loads.length === 0) return ["the machine's load could not be measured"];
  const limit = GUARD.maxLoadPerCore * m.cores;
  const worst = Math.max(...loads);
  return worst > limit
    ? [`1-minute load average reached ${worst.toFixed(2)} on ${m.cores} cores (limit ${limit})`]
    : [];
}

/**
 * Why a thread sweep and the timed rounds after it show a starved peer. `what` names the
 * workload ("batch 8 decode"); `timed` holds the peer's rates in the timed rounds.
 */
export function sweepReasons(
  what: string,
  sweep: ThreadSweep,
  timed: readonly number[],
  cores: number,
): string[] {
  return [...collapseReasons(what, sweep, cores), ...starvedReasons(what, sweep, timed)];
}

function fewestRate(sweep: ThreadSweep): { threads: number; rate: number } {
  const fewest = sweep.tried.reduce((a, b) => (b.threads < a.threads ? b : a), sweep.tried[0]!);
  return { threads: fewest.threads, rate: bestRate(fewest) };
}

/** Thread counts the machine has cores for that ran far below the fewest threads' rate. */
export function collapseReasons(what: string, sweep: ThreadSweep, cores: number): string[] {
  const { threads: few, rate: base } = fewestRate(sweep);
  const out: string[] = [];
  for (const t of sweep.tried) {
    if (t.threads > few && t.threads <= cores) {
      const r = bestRate(t);
      if (r < GUARD.minCountOverFewest * base) {
        out.push(
          `${what}: ${t.threads} threads ran at ${rate(r)}, under ${
            pct(GUARD.minCountOverFewest)
          } of the ${few}-thread ${rate(base)}, on ${cores} cores: the cores were ` +
            `not free`,
        );
      }
    }
  }
  return out;
}

/** The peer's timed rounds far below its own rate at its fewest threads: it was starved. */
export function starvedReasons(
  what: string,
  sweep: ThreadSweep,
  timed: readonly number[],
): string[] {
  const { threads: few, rate: base } = fewestRate(sweep);
  const out: string[] = [];
  if (timed.length > 0) {
    const m = median(timed);
    if (m < GUARD.minTimedOverFewest * base) {
      out.push(
        `${what}: timed at ${rate(m)} with ${sweep.chosen} threads, under ${
          pct(GUARD.minTimedOverFewest)
        } of its own ${few}-thread ${rate(base)} in the sweep: starved`,
      );
    }
  }
  return out;
}

/** Why the rounds disagree too much to give one ratio. */
export function spreadReasons(
  what: string,
  pairs: readonly { kiln: number; peer: number }[],
): string[] {
  const ratios = pairs.map((p) => p.kiln / p.peer).filter((r) => Number.isFinite(r) && r > 0);
  if (ratios.length < 2) return [];
  const spread = Math.max(...ratios) / Math.min(...ratios);
  return spread > GUARD.maxRoundSpread
    ? [`${what}: Kiln ÷ peer varied ${spread.toFixed(1)}× over the rounds`]
    : [];
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * Set `publishable` and `withheld` on a report that has timings: publishable only when neither
 * the machine nor the peer's own sweep gives a reason to doubt it, and the peer did not fail.
 */
export function judgePeer(report: PeerReport, machine: MachineCheck): void {
  if (report.decode === undefined && report.prefill === undefined) return;
  const reasons = report.status === "ok" ? [] : [`the peer failed: ${report.reason ?? "error"}`];
  reasons.push(...machineReasons(machine));
  // Collapsed counts blame the machine only where the others' share went unmeasured.
  const measured = machine.windows.some((w) => w.foreign_cpu_share !== null);
  const notes: string[] = [];
  const workloads = [
    ...(report.decode ?? []).map((d) => ({ what: `batch ${d.batch} decode`, ...d })),
    ...(report.prefill ?? []).map((f) => ({ what: `${f.prompt_tokens}-token prefill`, ...f })),
  ];
  for (const w of workloads) {
    if (w.threads) {
      const collapsed = collapseReasons(w.what, w.threads, machine.cores);
      if (measured) notes.push(...collapsed);
      else reasons.push(...collapsed);
      reasons.push(...starvedReasons(w.what, w.threads, w.tokens_per_s.map((p) => p.peer)));
    }
    reasons.push(...spreadReasons(w.what, w.tokens_per_s));
  }
  report.publishable = reasons.length === 0;
  if (reasons.length > 0) report.withheld = reasons;
  else delete report.withheld;
  if (notes.length > 0) report.notes = notes;
  else delete report.notes;
}

/** A report's ratios may be printed: its run carried the guard and passed it. */
export function publishable(report: PeerReport): boolean {
  return report.publishable === true;
}

/** Why a report's ratios are not printed (a report from before the guard has no verdict). */
export function withheldBecause(report: PeerReport): string[] {
  if (report.publishable === true) return [];
  return report.withheld ?? ["this run predates the starvation and load guard"];
}
