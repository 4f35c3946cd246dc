/**
 * Cancellation checks every engine must pass, shared by the engines' own tests: a request whose
 * signal is already aborted ends `cancelled` before any token and holds nothing; consumers that
 * leave their loops early (`break`) cancel their requests, whose KV is free within one step, so
 * a next request finds a slot at once. Event-driven: each wait ends on the engine's own report.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { type LLMEngine, RequestContext } from "../../src/contract/engine.ts";
import type { RequestStats } from "../../src/engines/live_requests.ts";
import { bytes, collect, request } from "./fortune_engine.ts";

type Maybe<T> = T | Promise<T>;

/** What a check reads of the engine besides its streams. */
export interface CancelProbe {
  /** KV blocks (ORT: request slots) held now. */
  used(): Maybe<number>;
  /** Work done so far (steps submitted, session runs); absent: not checked. */
  steps?(): Maybe<number>;
  /** Requests admitted and how they ended; absent: not checked. */
  stats?(): Maybe<RequestStats>;
  /**
   * Resolves at the engine's next KV report (its gauges, pushed after each step); absent: the
   * engine frees a stream's KV as the stream ends, synchronously, unless `freedByNextStep`.
   */
  nextReport?(): Promise<void>;
  /**
   * The KV of a stream left early is freed at the engine's next step and nothing here reports
   * when (an engine in a worker): checked once the next request has run.
   */
  freedByNextStep?: boolean;
}

/** A `nextReport` for an engine with `onGauges` (WebGpuEngine, OrtEngine). */
export function gaugeReports(
  engine: { onGauges(cb: (v: { usagePercent: number }) => void): void },
): { nextReport(): Promise<void>; usage(): number } {
  let waiters: (() => void)[] = [];
  let usage = NaN;
  engine.onGauges((v) => {
    usage = v.usagePercent;
    const w = waiters;
    waiters = [];
    for (const wake of w) wake();
  });
  return { nextReport: () => new Promise<void>((r) => waiters.push(r)), usage: () => usage };
}

/** Rejects if `p` has not settled after `ms` (a liveness bound, so a bug fails instead of hanging). */
async function bounded<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(what)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const live = (s: RequestStats) => s.started - s.finished - s.cancelled - s.failed;

/** Run the checks on `e`, started, serving fortune, with `maxNumSeqs` 4 (and otherwise idle). */
export async function checkCancellation(e: LLMEngine, p: CancelProbe): Promise<void> {
  const stats0 = await p.stats?.();
  // A signal that is already aborted: cancelled before any token, even for max_tokens 0.
  const gone = new AbortController();
  gone.abort();
  for (const max of [50, 0]) {
    const pre = await collect(
      e,
      request(bytes("You will"), { stop_conditions: { max_tokens: max } }),
      new RequestContext({ signal: gone.signal }),
    );
    equal(pre.chunks.length, 1, `max_tokens ${max}: one chunk`);
    equal(pre.last.finish_reason, "cancelled");
    equal(pre.ids.length, 0);
    equal(pre.last.completion_usage?.completion_tokens, 0);
    equal(await p.used(), 0, "a pre-aborted request holds no KV");
  }
  if (stats0) equal((await p.stats!()).cancelled, stats0.cancelled + 2);

  // Four consumers leave their loops after two chunks of a long request (all the engine's slots).
  const steps0 = await p.steps?.();
  await Promise.all([0, 1, 2, 3].map(async (i) => {
    let n = 0;
    const req = request(bytes(`Stream ${i}`), {
      stop_conditions: { max_tokens: 900, ignore_eos: true },
    });
    for await (const _ of e.generate(req, new RequestContext())) if (++n === 2) break;
  }));
  const leftAt = await p.steps?.();
  if (stats0) {
    const s = await p.stats!();
    equal(live(s), 0, `no request left running: ${JSON.stringify(s)}`);
    equal(s.cancelled, stats0.cancelled + 6);
  }
  if (steps0 !== undefined) ok(leftAt! - steps0 < 900, "the abandoned requests did not run on");
  // Their KV is free within one step: the next report (at most one step later) shows none held.
  if (p.nextReport) {
    await bounded(
      (async () => {
        while (await p.used() > 0) await p.nextReport!();
      })(),
      120_000,
      "KV still held after the consumers left",
    );
    const after = await p.steps!() - leftAt!;
    ok(after <= 1, `steps after the cancels: ${after}`);
  }
  if (!p.freedByNextStep) equal(await p.used(), 0, "abandoned streams hold no KV");

  // A fifth request gets a slot at once: it runs in a handful of steps, not after 900 tokens.
  const before = await p.steps?.();
  const fifth = await collect(e, request(bytes("Five"), { stop_conditions: { max_tokens: 2 } }));
  deepStrictEqual([fifth.ids.length, fifth.last.finish_reason], [2, "length"]);
  if (before !== undefined) {
    const took = await p.steps!() - before;
    ok(took < 20, `the fifth request took ${took} steps`);
  }
  equal(await p.used(), 0, "no KV held once the fifth request is done");
}
