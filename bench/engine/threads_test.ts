import {
  deepStrictEqual as deepEqual,
  ok,
  rejects,
  strictEqual as equal,
  throws,
} from "node:assert/strict";
import {
  bestRate,
  chooseThreads,
  describeSweep,
  parseThreadList,
  sweepThreads,
  threadCandidates,
} from "./threads.ts";

Deno.test("candidates are 1 to the core count; a bad count gives 1", () => {
  deepEqual(threadCandidates(4), [1, 2, 3, 4]);
  deepEqual(threadCandidates(1), [1]);
  deepEqual(threadCandidates(0), [1]);
  deepEqual(threadCandidates(Number.NaN), [1]);
});

Deno.test("--peer-threads lists are sorted, deduplicated, and positive integers only", () => {
  deepEqual(parseThreadList("4,1,2,2"), [1, 2, 4]);
  deepEqual(parseThreadList(" 3 , 1 "), [1, 3]);
  for (const bad of ["", ",", "0", "1,-2", "1.5", "two"]) {
    throws(() => parseThreadList(bad), /--peer-threads/, bad);
  }
});

Deno.test("the fastest count wins (best of its rounds); a tie goes to fewer threads", () => {
  const tried = [
    { threads: 1, tokens_per_s: [680, 650] },
    { threads: 2, tokens_per_s: [1.5, 1.6] },
  ];
  equal(bestRate(tried[0]!), 680);
  equal(chooseThreads(tried), 1);
  equal(chooseThreads([{ threads: 1, tokens_per_s: [10] }, { threads: 2, tokens_per_s: [30] }]), 2);
  equal(chooseThreads([{ threads: 4, tokens_per_s: [30] }, { threads: 2, tokens_per_s: [30] }]), 2);
  equal(bestRate({ threads: 3, tokens_per_s: [] }), 0);
  throws(() => chooseThreads([]), /no thread count/);
});

Deno.test("a sweep interleaves the counts, keeps the fastest and leaves the peer at it", async () => {
  // A peer whose speed depends on its thread count; the second round of 3 threads is disturbed.
  const speed: Record<number, number[]> = { 1: [100, 100], 2: [180, 170], 3: [190, 20] };
  const calls: string[] = [];
  let current = 0;
  const seen: Record<number, number> = {};
  const sweep = await sweepThreads(
    { candidates: [1, 2, 3], rounds: 2 },
    (n) => {
      calls.push(`set ${n}`);
      current = n;
      return Promise.resolve();
    },
    () => {
      calls.push(`run ${current}`);
      const i = seen[current] = (seen[current] ?? -1) + 1;
      return Promise.resolve(speed[current]![i]!);
    },
  );
  equal(sweep.chosen, 3, "best of its rounds: 190");
  deepEqual(sweep.tried, [
    { threads: 1, tokens_per_s: [100, 100] },
    { threads: 2, tokens_per_s: [180, 170] },
    { threads: 3, tokens_per_s: [190, 20] },
  ]);
  deepEqual(calls, [
    "set 1",
    "run 1",
    "set 2",
    "run 2",
    "set 3",
    "run 3",
    "set 1",
    "run 1",
    "set 2",
    "run 2",
    "set 3",
    "run 3",
    "set 3",
  ]);
  equal(current, 3);
  const text = describeSweep(sweep);
  ok(text.startsWith("3 threads (tried 1: 100, 2: 180, 3: 190 tok/s)"), text);
});

Deno.test("a sweep with no candidates or a failing run rejects", async () => {
  const set = () => Promise.resolve();
  await rejects(sweepThreads({ candidates: [], rounds: 1 }, set, () => Promise.resolve(1)));
  await rejects(
    sweepThreads({ candidates: [1], rounds: 1 }, set, () => Promise.reject(new Error("crashed"))),
    /crashed/,
  );
});
