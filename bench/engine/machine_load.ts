/**
 * How much of the machine other processes took while the benchmark timed its engines. On Linux,
 * from `/proc`: the CPU time all CPUs spent busy (steal included: a VM's host took it) less the
 * time this process and its descendants (the peers' driver processes) used, over the window's
 * whole capacity (wall time × CPUs). That share is what distorts a ratio; the load average,
 * recorded beside it, counts the benchmark's own threads too and is only a fallback where
 * `/proc` is absent.
 */

/** Jiffies (USER_HZ ticks) at one moment. */
export interface CpuSample {
  /** All CPUs' time, busy or idle. */
  total: number;
  /** All CPUs' busy time (not idle, not iowait). */
  busy: number;
  /** This process's and its descendants' user + system time, reaped children included. */
  own: number;
}

/** One timed stretch of the comparison. */
export interface LoadWindow {
  label: string;
  /** Share of the machine's CPU capacity others used, 0 to 1; null where not measurable. */
  foreign_cpu_share: number | null;
  /** 1-minute load average at the window's end; null where not available. */
  loadavg_1m: number | null;
}

/** The machine during one comparison of Kiln with its peers. */
export interface MachineCheck {
  cores: number;
  loadavg_1m_before: number | null;
  loadavg_1m_after: number | null;
  windows: LoadWindow[];
}

/** Where readings come from (the real machine in the bench, a fake in tests). */
export interface LoadProbe {
  cores: number;
  /** A sample, or undefined where `/proc` cannot be read. */
  sample(): Promise<CpuSample | undefined>;
  /** The 1-minute load average, or undefined where the runtime has none. */
  loadavg(): number | undefined;
}

/** `{ total, busy }` from `/proc/stat`'s first line (guest time is already inside user). */
export function parseProcStat(text: string): { total: number; busy: number } {
  const line = text.split("\n").find((l) => l.startsWith("cpu "));
  if (!line) throw new Error("/proc/stat: no aggregate cpu line");
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal guest guest_nice
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = f;
  const busy = user + nice + system + irq + softirq + steal;
  return { total: busy + idle + iowait, busy };
}

/** A `/proc/<pid>/stat` line: its parent and its CPU time (own and reaped children's). */
export function parsePidStat(text: string): { ppid: number; jiffies: number } {
  // The command name (field 2) is in parentheses and may hold spaces: count from the last ')'.
  const rest = text.slice(text.lastIndexOf(")") + 2).trim().split(/\s+/);
  // rest[0] is field 3 (state); fields 4 (ppid), 14-17 (utime stime cutime cstime).
  const n = (field: number) => Number(rest[field - 3] ?? 0);
  return { ppid: n(4), jiffies: n(14) + n(15) + n(16) + n(17) };
}

/** Share of the capacity between two samples that other processes used, clamped to 0..1. */
export function foreignShare(a: CpuSample, b: CpuSample): number {
  const total = b.total - a.total;
  if (!(total > 0)) return 0;
  const foreign = (b.busy - a.busy) - (b.own - a.own);
  return Math.min(1, Math.max(0, foreign / total));
}

/** CPU time of `root` and every live descendant, from a map pid → `/proc/<pid>/stat` text. */
export function treeJiffies(stats: ReadonlyMap<number, string>, root: number): number {
  const children = new Map<number, number[]>();
  const jiffies = new Map<number, number>();
  for (const [pid, text] of stats) {
    const s = parsePidStat(text);
    jiffies.set(pid, s.jiffies);
    (children.get(s.ppid) ?? children.set(s.ppid, []).get(s.ppid)!).push(pid);
  }
  let sum = 0;
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    sum += jiffies.get(pid) ?? 0;
    stack.push(...(children.get(pid) ?? []));
  }
  return sum;
}

async function readProcStats(): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      out.set(Number(e.name), await Deno.readTextFile(`/proc/${e.name}/stat`));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** The real machine: `/proc` where there is one, `Deno.loadavg()`, `navigator.hardwareConcurrency`. */
export const machineProbe: LoadProbe = {
  cores: navigator.hardwareConcurrency,
  async sample() {
    try {
      const { total, busy } = parseProcStat(await Deno.readTextFile("/proc/stat"));
      return { total, busy, own: treeJiffies(await readProcStats(), Deno.pid) };
    } catch {
      return undefined;
    }
  },
  loadavg() {
    try {
      const l = Deno.loadavg()[0];
      return l === undefined || l <= 0 ? undefined : l; // Windows answers zeros
    } catch {
      return undefined;
    }
  },
};

/** Records windows of a comparison: `start()`, then `mark(label)` at the end of each stretch. */
export class LoadWatch {
  #last: CpuSample | undefined;
  readonly check: MachineCheck;

  constructor(private readonly probe: LoadProbe) {
    this.check = {
      cores: probe.cores,
      loadavg_1m_before: null,
      loadavg_1m_after: null,
      windows: [],
    };
  }

  async start(): Promise<void> {
    this.check.loadavg_1m_before = this.probe.loadavg() ?? null;
    this.#last = await this.probe.sample();
  }

  /** Close the window that began at the previous mark (or `start`). */
  async mark(label: string): Promise<void> {
    const now = await this.probe.sample();
    const share = this.#last && now ? foreignShare(this.#last, now) : null;
    this.#last = now;
    const load = this.probe.loadavg() ?? null;
    this.check.windows.push({ label, foreign_cpu_share: share, loadavg_1m: load });
    this.check.loadavg_1m_after = load;
  }
}
