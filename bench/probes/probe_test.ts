/**
 * The probes run on lavapipe and report what they did: the read probe its bytes, the FMA probe
 * its threads and rounds (raised until a dispatch takes the time asked), with finite rates.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { testGpu } from "../../test/support/gpu.ts";
import { fmaProbe, readProbe } from "./probe.ts";

Deno.test("probes: the read and FMA probes measure finite, positive rates", async () => {
  const gpu = await testGpu();
  const read = await readProbe(gpu, { bytes: 16 << 20, minSeconds: 0.01 });
  equal(read.bytes, 16 << 20);
  ok(Number.isFinite(read.gb_per_s) && read.gb_per_s > 0, JSON.stringify(read));
  const fma = await fmaProbe(gpu, { workgroups: 4, minDispatchSeconds: 0.002 });
  equal(fma.threads, 4 * 256);
  ok(fma.rounds >= 16 && (fma.rounds & (fma.rounds - 1)) === 0, `rounds ${fma.rounds}`);
  ok(Number.isFinite(fma.gflop_per_s) && fma.gflop_per_s > 0, JSON.stringify(fma));
});
