import { deepStrictEqual as deepEqual, ok, strictEqual as equal } from "node:assert/strict";
import { comparePeers, median } from "./compare.ts";
import type { Peer } from "../../tools/peers/peer.ts";
import type { LoadProbe } from "./machine_load.ts";

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

/** A machine where others use 1% of the CPU, whatever is asked. */
function quietProbe(share = 0.01): LoadProbe {
  let t = 0;
  return {
    cores: 2,
    sample: () => {
      t += 1000;
      return Promise.resolve({ total: t, busy: t * share, own: 0 });
    },
    loadavg: () => 0.3,
  };
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
  const { peers: reports, machine } = await comparePeers(
    kiln,
    [same, off, away, flaky],
    "/m",
    { ...plan, probe: quietProbe() },
    () => {},
  );
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
  // A quiet machine: one window per round, the peer that ran clean may be published.
  deepEqual(machine.windows.map((w) => w.label), ["round 1", "round 2", "round 3"]);
  equal(by.same!.publishable, true);
  equal(by.flaky!.publishable, false, "a peer that failed midway is not published");
  equal(by.off!.publishable, undefined, "untimed: nothing to judge");
});

/**
 * A CPU peer whose decode speed depends on its thread count, as ggml's does on a busy 2-core
 * machine: `rates[threads]` tokens/s (the same at every batch size here).
 */
function cpuPeer(calls: string[], rates: Record<number, number>): Peer {
  let threads = 0;
  const peer = fake("cpu", calls, { tps: 1, prefillTps: 1 });
  return {
    ...peer,
    setThreads: (n) => {
      threads = n;
      calls.push(`cpu:threads:${n}`);
      return Promise.resolve();
    },
    decode: (_ids, n, batch) => {
      calls.push(`cpu:decode:${batch}@${threads}`);
      return Promise.resolve({ tokens: n * batch, seconds: (n * batch) / (rates[threads] ?? 1) });
    },
    prefill: (ids) => {
      calls.push(`cpu:prefill:${ids.length}@${threads}`);
      return Promise.resolve({ seconds: ids.length / (10 * (rates[threads] ?? 1)) });
    },
  };
}

Deno.test("a CPU peer is timed at its fastest thread count, and every tried count is reported", async () => {
  const calls: string[] = [];
  const kiln = fake("kiln", calls, { tps: 114, prefillTps: 1000 });
  const cpu = cpuPeer(calls, { 1: 680, 2: 400 });
  const { peers: [r] } = await comparePeers(kiln, [cpu], "/m", {
    ...plan,
    threads: { candidates: [1, 2], rounds: 2 },
    probe: quietProbe(),
  }, () => {});
  equal(r!.status, "ok");
  for (const d of r!.decode!) {
    equal(d.threads!.chosen, 1);
    deepEqual(d.threads!.tried, [
      { threads: 1, tokens_per_s: [680, 680] },
      { threads: 2, tokens_per_s: [400, 400] },
    ]);
    equal(d.kiln_over_peer, 114 / 680);
  }
  equal(r!.prefill![0]!.threads!.chosen, 1);
  equal(r!.publishable, true, r!.withheld?.join("; ") ?? "");
  // Every timed round ran at the chosen count.
  const timed = calls.slice(calls.indexOf("kiln:decode:1"));
  ok(timed.filter((c) => c.startsWith("cpu:decode")).every((c) => c.endsWith("@1")));
  ok(timed.filter((c) => c.startsWith("cpu:prefill")).every((c) => c.endsWith("@1")));
  // The sweep tried 1 and 2 at each batch before any timed round, interleaved per round.
  const sweep = calls.slice(0, calls.indexOf("kiln:decode:1")).filter((c) => c.includes("@"));
  deepEqual(sweep.slice(-4), [
    "cpu:prefill:8@1",
    "cpu:prefill:8@2",
    "cpu:prefill:8@1",
    "cpu:prefill:8@2",
  ]);
});

Deno.test("a collapsed thread count withholds the ratios unless the others' CPU share was measured low", async () => {
  const kiln = fake("kiln", [], { tps: 114 });
  const sweep = { ...plan, prefill: [], threads: { candidates: [1, 2], rounds: 1 } };
  const unmeasured: LoadProbe = {
    cores: 2,
    sample: () => Promise.resolve(undefined),
    loadavg: () => 0.3,
  };
  const blind = await comparePeers(kiln, [cpuPeer([], { 1: 680, 2: 1.5 })], "/m", {
    ...sweep,
    probe: unmeasured,
  }, () => {});
  const c = blind.peers[0]!;
  equal(c.decode![0]!.threads!.chosen, 1, "still timed at its best");
  equal(c.publishable, false);
  ok(c.withheld!.some((w) => /2 threads ran at 1.50 tok\/s/.test(w)), c.withheld!.join("; "));

  // /proc saw the others take 1% of the machine: the collapse is kept as a note only.
  const quiet = await comparePeers(kiln, [cpuPeer([], { 1: 680, 2: 1.5 })], "/m", {
    ...sweep,
    probe: quietProbe(),
  }, () => {});
  const q = quiet.peers[0]!;
  equal(q.publishable, true, (q.withheld ?? []).join("; "));
  ok(q.notes!.some((n) => /2 threads ran at 1.50 tok\/s/.test(n)), String(q.notes));
});

Deno.test("a busy machine keeps the ratios from being published", async () => {
  const kiln = fake("kiln", [], { tps: 114 });

  const busy = await comparePeers(kiln, [fake("gpu", [], { tps: 50 })], "/m", {
    ...plan,
    probe: quietProbe(0.6),
  }, () => {});
  equal(busy.peers[0]!.publishable, false);
  ok(busy.peers[0]!.withheld!.every((w) => /60% of the machine's CPU/.test(w)));
  equal(busy.machine.windows.length, plan.rounds);
});

Deno.test("median of odd and even counts", () => {
  equal(median([3, 1, 2]), 2);
  equal(median([4, 1, 3, 2]), 2.5);
});
