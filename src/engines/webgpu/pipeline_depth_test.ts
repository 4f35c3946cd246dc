import { strictEqual as equal } from "node:assert/strict";
import { MAX_DEPTH, MIN_DEPTH, PipelineDepth } from "./pipeline_depth.ts";

/** Steps `ms` apart on the GPU, each submitted before the previous one resolved. */
function queued(p: PipelineDepth, ms: number, steps = 40): void {
  for (let i = 0; i < steps; i++) p.observe(i * ms - 1, (i + 1) * ms);
}

Deno.test("pipeline depth: fixed when asked, the minimum until a step time is measured", () => {
  equal(new PipelineDepth(1).depth, 1);
  equal(new PipelineDepth().depth, MIN_DEPTH);
});

Deno.test("pipeline depth: enough steps to hide the read-back, within bounds", () => {
  const fast = new PipelineDepth();
  queued(fast, 0.5); // H100-like: 0.5 ms per step
  equal(fast.depth, MAX_DEPTH);
  const mid = new PipelineDepth();
  queued(mid, 5);
  equal(mid.depth, 6); // ceil(25 / 5) + 1
  const slow = new PipelineDepth();
  queued(slow, 100); // a CPU adapter
  equal(slow.depth, MIN_DEPTH);
});

Deno.test("pipeline depth: idle gaps between steps are not taken for GPU time", () => {
  const p = new PipelineDepth();
  // Each step submitted after the previous one resolved: nothing queued, nothing measured.
  for (let i = 0; i < 10; i++) p.observe(i * 50 + 1, i * 50 + 2);
  equal(p.stepMs, undefined);
});

Deno.test("pipeline depth: a drained step's cost in pipelined steps", () => {
  const p = new PipelineDepth();
  equal(p.drainCost({ submitted: 0, resolvedAt: 30 }), 0, "nothing known yet: free");
  queued(p, 5, 5);
  equal(p.drainCost({ submitted: 100, resolvedAt: 120 }), 0, "four gaps are not enough");
  // Read-backs that resolve together are no gap; a late outlier does not move the median.
  for (let i = 0; i < 5; i++) p.observe(999, 1000);
  p.observe(999, 1200);
  queued(p, 5, 6);
  equal(p.drainCost({ submitted: 100, resolvedAt: 120 }), 3, "20 ms where a step takes 5");
  equal(p.drainCost({ submitted: 100, resolvedAt: 103 }), 0, "never below nothing");
  equal(p.drainCost({ submitted: 100, resolvedAt: undefined }), 0);
});
