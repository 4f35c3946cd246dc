/**
 * DP4A on this adapter (issue 25, item 4; see `dp4a_run.ts`): a Q8_0 decode product by
 * `dot4I8Packed` against its float twin and Kiln's matvec, same run, each checked against
 * float64. Writes `bench/results/dp4a-<adapter>.json`. `node bench/kernels/matvec_browser.mjs --page
 * dp4a` runs the same in Chromium (SwiftShader).
 *
 *   deno run -A bench/probes/dp4a.ts [--quick] [--out FILE]
 *
 * @module
 */
import { acquireGpu } from "../../src/gpu/device.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";
import { adapterSlug } from "../lib/adapter_slug.ts";
import { dp4aReport, hasDp4a } from "./dp4a_run.ts";

const { flags } = runCli({
  name: "dp4a",
  command: "deno run -A bench/probes/dp4a.ts",
  about: "A Q8_0 decode product by dot4I8Packed against its float twin and Kiln's matvec, " +
    "same adapter, same run; JSON in bench/results/.",
  flags: {
    quick: { type: "boolean", help: "one small shape, few dispatches (checks the plumbing)" },
    out: { type: "string", arg: "FILE", help: "the JSON (default bench/results/dp4a-...)" },
  },
});
const gpu = await acquireGpu({ label: "bench-dp4a" });
if (!hasDp4a()) {
  console.error(`${gpu.caps.adapter}: WGSL has no dot4I8Packed here; nothing to measure`);
  Deno.exit(0);
}
const wgsl = await Deno.readTextFile(new URL("./dp4a_probe.wgsl", import.meta.url));
const report = await dp4aReport(gpu, wgsl, flags.quick);
const out = flags.out ??
  new URL(`../results/dp4a-${adapterSlug(gpu.caps.adapter)}.json`, import.meta.url).pathname;
await Deno.writeTextFile(out, JSON.stringify(report, null, 2) + "\n");
console.error(`wrote ${out}`);
