/**
 * Kiln against its peers on one model: each peer must first produce Kiln's greedy tokens for
 * the same prompt (a peer that differs is not timed, and the report says where it diverged);
 * then, after one untimed warm-up pass per peer, a peer that runs on CPU threads (`setThreads`)
 * is run at each candidate thread count per workload and keeps the fastest (`threads.ts`); then
 * Kiln and the peers run interleaved, A B C A B C ..., for a few rounds, so drift in the
 * machine's state hits every engine alike. Ratios are Kiln ÷ peer (throughput; above 1 means
 * Kiln is faster), the median over rounds. The machine's load is read around every timed stretch
 * and each report is judged publishable or not (`guard.ts`).
 */
import type { Peer } from "../../tools/peers/peer.ts";
import { judgePeer } from "./guard.ts";
import type { PeerReport, RoundPair } from "./peer_report.ts";
import { type LoadProbe, LoadWatch, type MachineCheck, machineProbe } from "./machine_load.ts";
import { describeSweep, sweepThreads, type ThreadPlan, type ThreadSweep } from "./threads.ts";

export interface ComparePlan {
  /** Prompt for the greedy check and the decode runs. */
  prompt: (length: number, salt: number) => number[];
  promptTokens: number;
  greedyTokens: number;
  decodeTokens: number;
  batches: readonly number[];
  prefill: readonly number[];
  rounds: number;
  /** Thread counts to try on peers with `setThreads` (without: they keep their default). */
  threads?: ThreadPlan;
  /** Where machine load is read (default: this machine). */
  probe?: LoadProbe;
}

/** Every peer's report, and the machine's load while they were timed. */
export interface Comparison {
  peers: PeerReport[];
  machine: MachineCheck;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** Compare `kiln` (already set up on `modelDir`) with each peer; closes the peers. */
export async function comparePeers(
  kiln: Peer,
  peers: readonly Peer[],
  modelDir: string,
  plan: ComparePlan,
  log: (line: string) => void = (l) => console.error(l),
): Promise<Comparison> {
  const reports = new Map<Peer, PeerReport>();
  const live: Peer[] = [];
  const watch = new LoadWatch(plan.probe ?? machineProbe);
  const checkPrompt = plan.prompt(plan.promptTokens, 1);
  const kilnIds = await kiln.greedy(checkPrompt, plan.greedyTokens);
  for (const p of peers) {
    const report: PeerReport = { name: p.name, status: "ok" };
    reports.set(p, report);
    try {
      const why = await p.setup(modelDir);
      if (why !== undefined) {
        Object.assign(report, { status: "unavailable", reason: why });
        log(`peer ${p.name}: unavailable: ${why}`);
        await p.close().catch(() => {});
        continue;
      }
      // A CPU peer starts at the fewest threads tried (its default may oversubscribe the cores).
      if (p.setThreads && plan.threads) await p.setThreads(Math.min(...plan.threads.candidates));
      const ids = await p.greedy(checkPrompt, plan.greedyTokens);
      const n = Math.max(ids.length, kilnIds.length);
      const diff = Array.from({ length: n }, (_, i) => i).find((i) => ids[i] !== kilnIds[i]);
      report.greedy = { prompt: checkPrompt, kiln: kilnIds, peer: ids };
      if (diff !== undefined) {
        report.greedy.first_difference = diff;
        Object.assign(report, {
          status: "mismatch",
          reason: `greedy tokens differ from Kiln's at position ${diff}: not timed`,
        });
        log(`peer ${p.name}: ${report.reason}`);
        await p.close().catch(() => {});
        continue;
      }
      live.push(p);
    } catch (e) {
      Object.assign(report, { status: "error", reason: message(e) });
      log(`peer ${p.name}: ${message(e)}`);
      await p.close().catch(() => {});
    }
  }
  if (live.length === 0) return { peers: [...reports.values()], machine: watch.check };

  const decode = new Map<Peer, Map<number, RoundPair[]>>();
  const prefill = new Map<Peer, Map<number, RoundPair[]>>();
  const push = (m: typeof decode, p: Peer, key: number, pair: RoundPair) => {
    const byKey = m.get(p) ?? m.set(p, new Map()).get(p)!;
    (byKey.get(key) ?? byKey.set(key, []).get(key)!).push(pair);
  };
  const fail = async (p: Peer, e: unknown) => {
    Object.assign(reports.get(p)!, { status: "error", reason: message(e) });
    log(`peer ${p.name}: ${message(e)}`);
    live.splice(live.indexOf(p), 1);
    await p.close().catch(() => {});
  };
  // One untimed pass per peer first (Kiln comes warm from its own measurements).
  for (const p of [...live]) {
    try {
      for (const batch of plan.batches) {
        await p.decode(plan.prompt(plan.promptTokens, 50), Math.min(3, plan.decodeTokens), batch);
      }
      for (const length of plan.prefill) await p.prefill?.(plan.prompt(length, 900 + length));
    } catch (e) {
      await fail(p, e);
    }
  }
  await watch.start();
  const sweeps = new Map<Peer, Sweeps>();
  for (const p of [...live]) {
    if (!p.setThreads || !plan.threads) continue;
    try {
      sweeps.set(p, await sweepPeer(p, plan, plan.threads, log));
      await watch.mark(`${p.name}'s thread sweep`);
    } catch (e) {
      await fail(p, e);
    }
  }
  for (let round = 0; round < plan.rounds; round++) {
    for (const batch of plan.batches) {
      const ids = plan.prompt(plan.promptTokens, 100 + round);
      const k = await kiln.decode(ids, plan.decodeTokens, batch);
      const kTps = k.tokens / k.seconds;
      for (const p of [...live]) {
        try {
          const t = sweeps.get(p)?.decode.get(batch)?.chosen;
          if (t !== undefined) await p.setThreads!(t);
          const r = await p.decode(ids, plan.decodeTokens, batch);
          push(decode, p, batch, { kiln: kTps, peer: r.tokens / r.seconds });
        } catch (e) {
          await fail(p, e);
        }
      }
    }
    for (const length of plan.prefill) {
      // A fresh prompt every round: no engine may serve it from a prefix cache.
      const ids = plan.prompt(length, 1000 + round * 7 + length);
      const withPrefill = live.filter((p) => p.prefill !== undefined);
      if (withPrefill.length === 0 || !kiln.prefill) continue;
      const k = await kiln.prefill(ids);
      for (const p of withPrefill) {
        try {
          const t = sweeps.get(p)?.prefill.get(length)?.chosen;
          if (t !== undefined) await p.setThreads!(t);
          const r = await p.prefill!(ids);
          push(prefill, p, length, { kiln: length / k.seconds, peer: length / r.seconds });
        } catch (e) {
          await fail(p, e);
        }
      }
    }
    await watch.mark(`round ${round + 1}`);
  }
  for (const p of live) await p.close().catch((e) => log(`peer ${p.name}: close: ${message(e)}`));
  const summarise = (pairs: RoundPair[]) => median(pairs.map((r) => r.kiln / r.peer));
  for (const [p, report] of reports) {
    const sw = sweeps.get(p);
    const d = decode.get(p);
    if (d) {
      report.decode = [...d].map(([batch, pairs]) => {
        const threads = sw?.decode.get(batch);
        return {
          batch,
          tokens_per_s: pairs,
          kiln_over_peer: summarise(pairs),
          ...(threads ? { threads } : {}),
        };
      });
    }
    const f = prefill.get(p);
    if (f) {
      report.prefill = [...f].map(([length, pairs]) => {
        const threads = sw?.prefill.get(length);
        return {
          prompt_tokens: length,
          tokens_per_s: pairs,
          kiln_over_peer: summarise(pairs),
          ...(threads ? { threads } : {}),
        };
      });
    }
    judgePeer(report, watch.check);
    if (report.withheld) log(`peer ${p.name}: ratios withheld: ${report.withheld.join("; ")}`);
    for (const n of report.notes ?? []) log(`peer ${p.name}: note: ${n}`);
  }
  return { peers: [...reports.values()], machine: watch.check };
}

interface Sweeps {
  decode: Map<number, ThreadSweep>;
  prefill: Map<number, ThreadSweep>;
}

/** Each workload of the plan at each candidate thread count (the peer is warm). */
async function sweepPeer(
  p: Peer,
  plan: ComparePlan,
  threads: ThreadPlan,
  log: (line: string) => void,
): Promise<Sweeps> {
  const set = (n: number) => p.setThreads!(n);
  const out: Sweeps = { decode: new Map(), prefill: new Map() };
  let salt = 60;
  for (const batch of plan.batches) {
    const s = await sweepThreads(threads, set, async () => {
      const r = await p.decode(plan.prompt(plan.promptTokens, salt++), plan.decodeTokens, batch);
      return r.tokens / r.seconds;
    });
    out.decode.set(batch, s);
    log(`peer ${p.name}: batch ${batch} decode: ${describeSweep(s)}`);
  }
  for (const length of plan.prefill) {
    if (!p.prefill) break;
    const s = await sweepThreads(threads, set, async () => {
      return length / (await p.prefill!(plan.prompt(length, 2000 + salt++))).seconds;
    });
    out.prefill.set(length, s);
    log(`peer ${p.name}: ${length}-token prefill: ${describeSweep(s)}`);
  }
  return out;
}
