import { ok, strictEqual as equal, throws } from "node:assert/strict";
import {
  type CpuSample,
  foreignShare,
  type LoadProbe,
  LoadWatch,
  machineProbe,
  parsePidStat,
  parseProcStat,
  treeJiffies,
} from "./machine_load.ts";

Deno.test("/proc/stat: busy counts steal, not idle or iowait", () => {
  const s = parseProcStat(
    "cpu  100 10 50 800 40 5 5 20 7 0\ncpu0 50 5 25 400 20 2 3 10 7 0\nintr 1 2\n",
  );
  equal(s.busy, 100 + 10 + 50 + 5 + 5 + 20);
  equal(s.total, s.busy + 800 + 40);
  throws(() => parseProcStat("intr 1 2\n"), /no aggregate cpu line/);
});

Deno.test("/proc/<pid>/stat: a command name with spaces and parentheses", () => {
  // pid (comm) state ppid ... utime(14) stime(15) cutime(16) cstime(17)
  const line = "42 (node (x) y) S 7 42 42 0 -1 4194304 1 0 0 0 300 40 5 2 20 0 3 0";
  const s = parsePidStat(line);
  equal(s.ppid, 7);
  equal(s.jiffies, 300 + 40 + 5 + 2);
});

Deno.test("a process tree's CPU time: the root, its children and theirs, not others", () => {
  const stat = (pid: number, ppid: number, ut: number) =>
    `${pid} (p) S ${ppid} 0 0 0 -1 0 0 0 0 0 ${ut} 0 0 0 20 0 1 0`;
  const stats = new Map([
    [10, stat(10, 1, 100)],
    [11, stat(11, 10, 20)],
    [12, stat(12, 11, 3)],
    [20, stat(20, 1, 1000)],
  ]);
  equal(treeJiffies(stats, 10), 123);
  equal(treeJiffies(stats, 20), 1000);
  equal(treeJiffies(stats, 99), 0);
});

Deno.test("foreign share: others' busy time over the window's capacity, clamped", () => {
  const a: CpuSample = { total: 1000, busy: 100, own: 50 };
  equal(foreignShare(a, { total: 1200, busy: 250, own: 150 }), 50 / 200);
  equal(foreignShare(a, { total: 1200, busy: 150, own: 150 }), 0, "own time only");
  equal(foreignShare(a, { total: 1200, busy: 150, own: 250 }), 0, "never below 0");
  equal(foreignShare(a, a), 0, "an empty window");
});

Deno.test("a watch records one window per mark with the share between marks", async () => {
  const samples: CpuSample[] = [
    { total: 0, busy: 0, own: 0 },
    { total: 100, busy: 60, own: 55 },
    { total: 200, busy: 160, own: 80 },
  ];
  const loads = [0.5, 0.7, 3.1];
  const probe: LoadProbe = {
    cores: 2,
    sample: () => Promise.resolve(samples.shift()),
    loadavg: () => loads.shift(),
  };
  const w = new LoadWatch(probe);
  await w.start();
  await w.mark("sweep");
  await w.mark("round 1");
  equal(w.check.cores, 2);
  equal(w.check.loadavg_1m_before, 0.5);
  equal(w.check.loadavg_1m_after, 3.1);
  equal(w.check.windows.length, 2);
  equal(w.check.windows[0]!.label, "sweep");
  equal(w.check.windows[0]!.foreign_cpu_share, 0.05);
  equal(w.check.windows[1]!.foreign_cpu_share, 0.75);
  equal(w.check.windows[1]!.loadavg_1m, 3.1);
});

Deno.test("without /proc a window's share is null", async () => {
  const w = new LoadWatch({ cores: 4, sample: () => Promise.resolve(undefined), loadavg: () => 1 });
  await w.start();
  await w.mark("round 1");
  equal(w.check.windows[0]!.foreign_cpu_share, null);
  equal(w.check.windows[0]!.loadavg_1m, 1);
});

Deno.test("this machine: samples only grow, and this process's time is inside the busy time", async () => {
  const a = await machineProbe.sample();
  if (a === undefined) return; // no /proc here: the bench falls back to the load average
  let x = 0;
  for (let i = 0; i < 2e6; i++) x += Math.sqrt(i); // some CPU time of our own
  const b = (await machineProbe.sample())!;
  ok(x > 0);
  ok(b.total >= a.total && b.busy >= a.busy && b.own >= a.own);
  ok(b.own > 0 && b.busy >= b.own, "own time is part of the machine's busy time");
  const share = foreignShare(a, b);
  ok(share >= 0 && share <= 1);
  ok(machineProbe.cores >= 1);
});
