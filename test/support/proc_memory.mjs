// deno-lint-ignore-file explicit-module-boundary-types
// Resident memory of the Chromium this Node process launched, from /proc (Linux): the browser
// process is a child of this process whose command line is Chromium's, and its descendants are
// told apart by their `--type=` switch (renderer, gpu-process, utility: the network service among
// them). A sampler polls them on an interval and keeps each kind's peak: the largest single
// process and the largest sum over the kind's processes.
import { readdirSync, readFileSync } from "node:fs";

function readProc(pid, file) {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch {
    return undefined;
  }
}

/** Every process as `{ pid, ppid, cmdline }`. */
function processes() {
  const out = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readProc(name, "stat");
    const cmd = readProc(name, "cmdline");
    if (stat === undefined || cmd === undefined) continue;
    // The comm field is in parentheses and may hold spaces: ppid is the second field after it.
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    // Chromium's children rewrite their title: their arguments may be one string, spaces apart.
    out.push({ pid: Number(name), ppid, cmdline: cmd.split(/[\0 ]/).filter((a) => a !== "") });
  }
  return out;
}

/** RSS in bytes of `pid` (VmRSS), or 0 when it is gone. */
export function rssBytes(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readProc(pid, "status") ?? "");
  return m ? Number(m[1]) * 1024 : 0;
}

/** The kind of a Chromium process: its `--type=` value ("browser" without one). */
function kindOf(cmdline) {
  const t = cmdline.find((a) => a.startsWith("--type="));
  if (t === undefined) return "browser";
  const kind = t.slice("--type=".length);
  if (kind === "utility") {
    const sub = cmdline.find((a) => a.startsWith("--utility-sub-type="));
    if (sub?.includes("network")) return "network";
  }
  return kind;
}

/** The Chromium processes under this Node process: `[{ pid, kind }]`. */
export function chromiumProcesses(root = process.pid) {
  const all = processes();
  const children = new Map();
  for (const p of all) {
    if (!children.has(p.ppid)) children.set(p.ppid, []);
    children.get(p.ppid).push(p);
  }
  const browsers = (children.get(root) ?? []).filter((p) =>
    p.cmdline.some((a) => /chrom/i.test(a))
  );
  const out = [];
  const walk = (p) => {
    out.push({ pid: p.pid, kind: kindOf(p.cmdline) });
    for (const c of children.get(p.pid) ?? []) walk(c);
  };
  browsers.forEach(walk);
  return out;
}

/**
 * Poll the Chromium processes every `intervalMs`; `stop()` returns the peaks per kind:
 * `{ [kind]: { max, sum } }` in bytes (`max`: the largest one process reached, `sum`: the largest
 * total over that kind's processes at one sample), and the number of samples.
 */
export function sampleChromiumMemory(intervalMs = 200) {
  const peaks = {};
  let samples = 0;
  const tick = () => {
    const sums = {};
    for (const { pid, kind } of chromiumProcesses()) {
      const rss = rssBytes(pid);
      const p = peaks[kind] ??= { max: 0, sum: 0 };
      p.max = Math.max(p.max, rss);
      sums[kind] = (sums[kind] ?? 0) + rss;
    }
    for (const [kind, s] of Object.entries(sums)) peaks[kind].sum = Math.max(peaks[kind].sum, s);
    samples++;
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  return {
    /** The peaks so far, without stopping. */
    peek: () => ({ peaks: structuredClone(peaks), samples }),
    stop() {
      clearInterval(timer);
      tick();
      return { peaks, samples };
    },
  };
}
