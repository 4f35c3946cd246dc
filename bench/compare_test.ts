import { deepEqual, equal, ok } from "node:assert/strict";
import { comparePeers, median } from "./compare.ts";
import type { Peer } from "./peers/peer.ts";

/** A stand-in engine on the CPU: greedy continues the prompt by +1, at a fixed speed. */
function fake(
  name: string,
  calls: string[],
  o: { tps: number; prefillTps?: number; offBy?: number; why?: string; throwAt?: number },
): Peer & { closed: boolean } {
  let decodes = 0;
  const peer: Peer & { closed: boolean } = {
    name,
    closed: false,
    setup: () => Promise.resolve(o.why),
    greedy: (ids, n) =>
      Promise.resolve(
        Array.from({ length: n }, (_, i) => ids.at(-1)! + 1 + i + (i === 3 ? o.offBy ?? 0 : 0)),
      ),
    decode: (_ids, n, batch) => {
      calls.push(`${name}:decode:${batch}`);
      if (++decodes === o.throwAt) return Promise.reject(new Error("peer crashed"));
      return Promise.resolve({ tokens: n * batch, seconds: (n * batch) / o.tps });
    },
    close: () => {
      peer.closed = true;
      return Promise.resolve();
    },
  };
  if (o.prefillTps !== undefined) {
    const tps = o.prefillTps;
    peer.prefill = (ids) => {
      calls.push(`${name}:prefill:${ids.length}`);
      return Promise.resolve({ seconds: ids.length / tps });
    };
  }
  return peer;
}

const plan = {
  prompt: (length: number, salt: number) => Array.from({ length }, (_, i) => salt * 10 + i),
  promptTokens: 4,
  greedyTokens: 6,
  decodeTokens: 5,
  batches: [1, 4],
  prefill: [8],
  rounds: 3,
};

Deno.test("peers are checked for Kiln's greedy tokens, then timed interleaved, with median ratios", async () => {
  const calls: string[] = [];
  const kiln = fake("kiln", calls, { tps: 100, prefillTps: 1000 });
  const same = fake("same", calls, { tps: 50, prefillTps: 4000 });
  const off = fake("off", calls, { tps: 10, offBy: 1 });
  const away = fake("away", calls, { tps: 10, why: "not installed" });
  const flaky = fake("flaky", calls, { tps: 25, throwAt: 5 });
  const reports = await comparePeers(kiln, [same, off, away, flaky], "/m", plan, () => {});
  const by = Object.fromEntries(reports.map((r) => [r.name, r]));
  equal(by.same!.status, "ok");
  deepEqual(by.same!.decode!.map((d) => [d.batch, d.kiln_over_peer]), [[1, 2], [4, 2]]);
  equal(by.same!.decode![0]!.tokens_per_s.length, 3);
  deepEqual(by.same!.prefill!.map((d) => [d.prompt_tokens, d.kiln_over_peer]), [[8, 0.25]]);
  equal(by.off!.status, "mismatch");
  equal(by.off!.greedy!.first_difference, 3);
  ok(by.off!.decode === undefined, "a peer that differs is not timed");
  equal(by.away!.status, "unavailable");
  equal(by.away!.reason, "not installed");
  equal(by.flaky!.status, "error");
  equal(by.flaky!.reason, "peer crashed");
  deepEqual(by.flaky!.decode!.map((d) => d.tokens_per_s.length), [1, 1], "kept: round 0");
  ok([same, off, away, flaky].every((p) => p.closed), "every peer is closed");
  // A warm-up pass per peer, then A B C, A B C: Kiln and each live peer, per batch, per round.
  deepEqual(calls.slice(0, 12), [
    "same:decode:1",
    "same:decode:4",
    "same:prefill:8",
    "flaky:decode:1",
    "flaky:decode:4",
    "kiln:decode:1",
    "same:decode:1",
    "flaky:decode:1",
    "kiln:decode:4",
    "same:decode:4",
    "flaky:decode:4",
    "kiln:prefill:8",
  ]);
  equal(calls.filter((c) => c === "kiln:decode:1").length, 3);
  equal(calls.filter((c) => c.startsWith("flaky")).length, 5, "no call after the failure");
});

Deno.test("median of odd and even counts", () => {
  equal(median([3, 1, 2]), 2);
  equal(median([4, 1, 3, 2]), 2.5);
});
