/**
 * The mixture-of-experts MLP's expert kernels (`moe_experts.wgsl`: gate/up of each token's routed
 * experts with the norm folded in, then down added to x) against the dense products over the
 * same active weights (`matvec_quant.wgsl` through `prepareProduct`: a [topK·2·inter, hidden]
 * gate/up product with SwiGLU, then a [hidden, topK·inter] down product, which is what the
 * indirect kernels would cost if the routed experts' rows were contiguous), and against running
 * every expert (the same dense products over all experts' rows: what routing saves). Q4_K weights
 * (Q6_K down), at a Qwen3-MoE-like shape scaled to a CPU adapter. Best of ROUNDS passes of ITERS
 * dispatches per kernel; prints (and with --out writes) JSON with ms per MLP step.
 *
 *   deno run -A bench/kernels/moe.ts [--tokens 1,4] [--rounds R] [--iters N] [--out F]
 */
import { acquireGpu } from "../../src/gpu/device.ts";
import { storageBuffer, uploadBuffer } from "../../src/gpu/buffers.ts";
import type { Dispatch } from "../../src/gpu/dispatch.ts";
import { prepareMoeExperts } from "../../src/gpu/kernels/moe.ts";
import { prepareProduct } from "../../src/gpu/product/product.ts";
import { kernelPaths } from "../../src/gpu/paths.ts";
import { quantize } from "../../src/gpu/formats/registry.ts";
import { dispatchTimer } from "../lib/timer.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";

const HIDDEN = 1024, INTER = 512, EXPERTS = 32, TOP_K = 4;

const { flags } = runCli({
  name: "moe",
  command: "deno run -A bench/kernels/moe.ts",
  about: "The routed-expert kernels against dense products over the same active weights and " +
    "over every expert; prints JSON.",
  flags: {
    tokens: { type: "list", default: ["1", "4"], help: "tokens per step" },
    iters: { type: "integer", min: 1, default: 3, help: "dispatches per timed pass" },
    rounds: { type: "integer", min: 1, default: 2, help: "timed passes (the best is kept)" },
    out: { type: "string", arg: "FILE", help: "also write the JSON report here" },
  },
});
const tokenCounts = flags.tokens.map(Number);
if (!tokenCounts.every((t) => Number.isInteger(t) && t >= 1)) {
  throw new Error("--tokens: integers >= 1");
}

const { device, caps } = await acquireGpu({ label: "bench-moe" });
const timer = dispatchTimer(device, caps.timestamps);

const values = (n: number, seed: number) =>
  new Float32Array(n).map((_, i) => (((i + seed) * 2654435761) % 1000) / 5000 - 0.1);
const q = (type: string, rows: number, cols: number, seed: number) =>
  uploadBuffer(device, `bench:${type}`, quantize(type, values(rows * cols, seed), rows, cols));

const gateUpBuffer = q("Q4_K", EXPERTS * 2 * INTER, HIDDEN, 1);
const downBuffer = q("Q6_K", EXPERTS * HIDDEN, INTER, 2);
const gateUp = { parts: [{ buffer: gateUpBuffer, experts: EXPERTS }], dtype: "Q4_K" as const };
const down = { parts: [{ buffer: downBuffer, experts: EXPERTS }], dtype: "Q6_K" as const };
const gamma = uploadBuffer(device, "bench:gamma", new Float32Array(HIDDEN).fill(1));
const scratch = {
  normed: storageBuffer(device, "bench:normed", 64 * HIDDEN * 4),
  product: storageBuffer(device, "bench:product", 64 * 2 * EXPERTS * INTER * 4),
};

async function time(ds: Dispatch[]): Promise<number> {
  let total = 0;
  for (const d of ds) {
    let t = Infinity;
    for (let r = 0; r < flags.rounds; r++) t = Math.min(t, await timer.time(d, flags.iters));
    total += t;
  }
  return total * 1e3;
}

/** Dense gate/up (SwiGLU) then down over `experts` experts' rows, as one product each. */
async function dense(tokens: number, experts: number, x: GPUBuffer): Promise<Dispatch[]> {
  const act = storageBuffer(device, "bench:dense_act", tokens * experts * INTER * 4);
  const y = storageBuffer(device, "bench:dense_y", tokens * HIDDEN * 4);
  const w = (buffer: GPUBuffer, dtype: "Q4_K" | "Q6_K", rows: number) => ({
    parts: [{ buffer, dtype, rows }],
  });
  return [
    ...await prepareProduct(
      device,
      {
        x,
        weight: w(gateUpBuffer, "Q4_K", 2 * experts * INTER),
        y: act,
        m: tokens,
        n: experts * INTER,
        k: HIDDEN,
        norm: { weight: gamma, eps: 1e-6 },
        epilogue: "swiglu",
      },
      scratch,
      "bench:dense_gate_up",
    ),
    // The slab read as a [hidden, experts·inter] matrix: as many bytes as `experts` experts'
    // down matrices.
    ...await prepareProduct(
      device,
      {
        x: act,
        weight: w(downBuffer, "Q6_K", HIDDEN),
        y,
        m: tokens,
        n: HIDDEN,
        k: experts * INTER,
        epilogue: "accumulate",
      },
      scratch,
      "bench:dense_down",
    ),
  ];
}

const results: Record<string, unknown>[] = [];
for (const tokens of tokenCounts) {
  const x = uploadBuffer(device, "bench:x", values(tokens * HIDDEN, 3));
  const ids = uploadBuffer(
    device,
    "bench:ids",
    Uint32Array.from({ length: tokens * TOP_K }, (_, i) => (i * 7) % EXPERTS),
  );
  const weights = uploadBuffer(device, "bench:w", new Float32Array(tokens * TOP_K).fill(0.25));
  const act = storageBuffer(device, "bench:act", tokens * TOP_K * INTER * 4);
  const routed = await prepareMoeExperts(device, {
    x,
    norm: { weight: gamma, eps: 1e-6 },
    gateUp,
    down,
    ids,
    weights,
    act,
    tokens,
    hidden: HIDDEN,
    inter: INTER,
    experts: EXPERTS,
    topK: TOP_K,
  }, "bench:routed");
  const row = {
    tokens,
    routed_ms: await time(routed),
    dense_active_ms: await time(await dense(tokens, TOP_K, x)),
    dense_all_experts_ms: await time(await dense(tokens, EXPERTS, x)),
  };
  results.push(row);
  console.error(JSON.stringify(row));
}

const report = {
  bench: "moe",
  adapter: caps.adapter,
  paths: kernelPaths(device).kind,
  date: new Date().toISOString(),
  timer: timer.kind,
  shape: {
    hidden: HIDDEN,
    inter: INTER,
    experts: EXPERTS,
    topK: TOP_K,
    gateUp: "Q4_K",
    down: "Q6_K",
  },
  note: "ms per MLP step (gate/up then down): routed = moe_experts over each token's topK " +
    "experts; dense_active = matvec/gemm products over topK experts' worth of contiguous rows; " +
    "dense_all_experts = the same over every expert.",
  results,
};
console.log(JSON.stringify(report, null, 2));
if (flags.out) await Deno.writeTextFile(flags.out, JSON.stringify(report, null, 2) + "\n");
