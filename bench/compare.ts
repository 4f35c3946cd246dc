/**
 * Kiln against its peers on one model: each peer must first produce Kiln's greedy tokens for
 * the same prompt (a peer that differs is not timed, and the report says where it diverged);
 * then, after one untimed warm-up pass per peer, Kiln and the peers run interleaved,
 * A B C A B C ..., for a few rounds, so drift in the
 * machine's state hits every engine alike. Ratios are Kiln ÷ peer (throughput; above 1 means
 * Kiln is faster), the median over rounds.
 */
import type { Peer } from "./peers/peer.ts";

export interface ComparePlan {
  /** Prompt for the greedy check and the decode runs. */
  prompt: (length: number, salt: number) => number[];
  promptTokens: number;
  greedyTokens: number;
  decodeTokens: number;
  batches: readonly number[];
  prefill: readonly number[];
  rounds: number;
}

export interface RoundPair {
  kiln: number;
  peer: number;
}

export interface PeerReport {
  name: string;
  status: "ok" | "unavailable" | "mismatch" | "error";
  reason?: string;
  greedy?: { prompt: number[]; kiln: number[]; peer: number[]; first_difference?: number };
  /** Tokens/s per round at each batch size, and Kiln ÷ peer (median over rounds). */
  decode?: { batch: number; tokens_per_s: RoundPair[]; kiln_over_peer: number }[];
  /** Prefill tokens/s per round at each prompt length, and Kiln ÷ peer. */
  prefill?: { prompt_tokens: number; tokens_per_s: RoundPair[]; kiln_over_peer: number }[];
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
): Promise<PeerReport[]> {
  const reports = new Map<Peer, PeerReport>();
  const live: Peer[] = [];
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
  if (live.length === 0) return [...reports.values()];

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
  for (let round = 0; round < plan.rounds; round++) {
    for (const batch of plan.batches) {
      const ids = plan.prompt(plan.promptTokens, 100 + round);
      const k = await kiln.decode(ids, plan.decodeTokens, batch);
      const kTps = k.tokens / k.seconds;
      for (const p of [...live]) {
        try {
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
          const r = await p.prefill!(ids);
          push(prefill, p, length, { kiln: length / k.seconds, peer: length / r.seconds });
        } catch (e) {
          await fail(p, e);
        }
      }
    }
  }
  for (const p of live) await p.close().catch((e) => log(`peer ${p.name}: close: ${message(e)}`));
  const summarise = (pairs: RoundPair[]) => median(pairs.map((r) => r.kiln / r.peer));
  for (const [p, report] of reports) {
    const d = decode.get(p);
    if (d) {
      report.decode = [...d].map(([batch, pairs]) => ({
        batch,
        tokens_per_s: pairs,
        kiln_over_peer: summarise(pairs),
      }));
    }
    const f = prefill.get(p);
    if (f) {
      report.prefill = [...f].map(([length, pairs]) => ({
        prompt_tokens: length,
        tokens_per_s: pairs,
        kiln_over_peer: summarise(pairs),
      }));
    }
  }
  return [...reports.values()];
}
