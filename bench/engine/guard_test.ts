import { deepStrictEqual as deepEqual, match, ok, strictEqual as equal } from "node:assert/strict";
import {
  GUARD,
  judgePeer,
  machineReasons,
  publishable,
  spreadReasons,
  sweepReasons,
  withheldBecause,
} from "./guard.ts";
import type { PeerReport } from "./peer_report.ts";
import type { MachineCheck } from "./machine_load.ts";

const quiet: MachineCheck = {
  cores: 2,
  loadavg_1m_before: 0.2,
  loadavg_1m_after: 1.9,
  windows: [
    { label: "sweep", foreign_cpu_share: 0.01, loadavg_1m: 1.5 },
    { label: "round 1", foreign_cpu_share: 0.02, loadavg_1m: 1.9 },
  ],
};

Deno.test("a quiet machine gives no reason; others' CPU share over the limit does", () => {
  deepEqual(machineReasons(quiet), []);
  const busy: MachineCheck = {
    ...quiet,
    windows: [quiet.windows[0]!, { label: "round 1", foreign_cpu_share: 0.6, loadavg_1m: 15 }],
  };
  const r = machineReasons(busy);
  equal(r.length, 1);
  match(r[0]!, /other processes used 60% of the machine's CPU during round 1/);
});

Deno.test("without /proc the load average decides; with neither, nothing is publishable", () => {
  const noProc = (loads: (number | null)[]): MachineCheck => ({
    cores: 2,
    loadavg_1m_before: loads[0]!,
    loadavg_1m_after: loads.at(-1)!,
    windows: loads.slice(1).map((l, i) => ({
      label: `round ${i + 1}`,
      foreign_cpu_share: null,
      loadavg_1m: l,
    })),
  });
  deepEqual(machineReasons(noProc([0.3, 1.2, 1.8])), []);
  match(machineReasons(noProc([0.3, 15.2]))[0]!, /load average reached 15.20 on 2 cores/);
  match(machineReasons(noProc([null, null]))[0]!, /could not be measured/);
});

const sweep = (rates: Record<number, number>, chosen: number) => ({
  chosen,
  tried: Object.entries(rates).map(([t, r]) => ({ threads: Number(t), tokens_per_s: [r] })),
});

Deno.test("a thread count the machine has cores for that collapses means the cores were not free", () => {
  // The case: 1 thread 680 tok/s, 2 threads 1.5 on a 2-core machine.
  const r = sweepReasons("batch 1 decode", sweep({ 1: 680, 2: 1.5 }, 1), [670], 2);
  equal(r.length, 1);
  match(r[0]!, /batch 1 decode: 2 threads ran at 1.50 tok\/s, under 25% of the 1-thread 680/);
  // More threads than cores (asked for with --peer-threads) may collapse without blame.
  deepEqual(sweepReasons("batch 1 decode", sweep({ 1: 680, 2: 700, 4: 2 }, 2), [690], 2), []);
  // A count that is merely slower is fine.
  deepEqual(sweepReasons("batch 1 decode", sweep({ 1: 680, 2: 400 }, 1), [650], 2), []);
});

Deno.test("timed rounds far below the peer's own fewest-thread rate mean it was starved", () => {
  const r = sweepReasons("batch 8 decode", sweep({ 1: 1000, 2: 900 }, 1), [300, 320, 310], 2);
  equal(r.length, 1);
  match(r[0]!, /batch 8 decode: timed at 310 tok\/s with 1 threads, under 50% .* starved/);
  deepEqual(
    sweepReasons("batch 8 decode", sweep({ 1: 1000 }, 1), [GUARD.minTimedOverFewest * 1000], 2),
    [],
  );
  // The fewest tried count is the reference when 1 was not tried.
  match(sweepReasons("x", sweep({ 2: 100, 4: 90 }, 2), [10], 8)[0]!, /2-thread 100 tok\/s/);
});

Deno.test("rounds whose ratios disagree more than twofold are withheld", () => {
  deepEqual(
    spreadReasons("batch 1 decode", [{ kiln: 100, peer: 50 }, { kiln: 100, peer: 40 }]),
    [],
  );
  match(
    spreadReasons("batch 1 decode", [{ kiln: 100, peer: 50 }, { kiln: 100, peer: 10 }])[0]!,
    /varied 5.0× over the rounds/,
  );
  deepEqual(spreadReasons("one round", [{ kiln: 100, peer: 1 }]), []);
});

Deno.test("judgePeer marks a clean report publishable and a starved or disturbed one not", () => {
  const clean: PeerReport = {
    name: "llama.cpp-cpu",
    status: "ok",
    decode: [{
      batch: 1,
      tokens_per_s: [{ kiln: 114, peer: 680 }],
      kiln_over_peer: 114 / 680,
      threads: sweep({ 1: 690, 2: 600 }, 1),
    }],
  };
  judgePeer(clean, quiet);
  equal(clean.publishable, true);
  equal(clean.withheld, undefined);
  ok(publishable(clean));
  deepEqual(withheldBecause(clean), []);

  const starved: PeerReport = {
    ...clean,
    decode: [{ ...clean.decode![0]!, tokens_per_s: [{ kiln: 23, peer: 0.93 }] }],
    prefill: [{ prompt_tokens: 64, tokens_per_s: [{ kiln: 10, peer: 5 }], kiln_over_peer: 2 }],
  };
  judgePeer(starved, {
    ...quiet,
    windows: [{ label: "round 1", foreign_cpu_share: 0.8, loadavg_1m: 15 }],
  });
  equal(starved.publishable, false);
  ok(!publishable(starved));
  equal(starved.withheld!.length, 2, starved.withheld!.join("\n"));
  match(starved.withheld![0]!, /80% of the machine's CPU/);
  match(starved.withheld![1]!, /starved/);

  const failed: PeerReport = { ...clean, status: "error", reason: "peer crashed" };
  judgePeer(failed, quiet);
  deepEqual(failed.withheld, ["the peer failed: peer crashed"]);

  const untimed: PeerReport = { name: "away", status: "unavailable", reason: "not installed" };
  judgePeer(untimed, quiet);
  equal(untimed.publishable, undefined, "nothing to publish, nothing judged");
});

Deno.test("a report from before the guard is never published", () => {
  const old: PeerReport = {
    name: "llama.cpp-cpu",
    status: "ok",
    decode: [{ batch: 1, tokens_per_s: [{ kiln: 23, peer: 0.93 }], kiln_over_peer: 25 }],
  };
  ok(!publishable(old));
  match(withheldBecause(old)[0]!, /predates the starvation and load guard/);
});
