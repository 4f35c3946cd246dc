/**
 * The mixture-of-experts kernels against their float64 references (`reference/moe.ts`): routing
 * over odd expert counts and top-k, renormalised or not (ids exactly, weights within f32
 * rounding); the routed experts over F32, F16, Q8_0 and Q4_K weights and odd widths, on both
 * kernel paths' devices, the weights decoded for the reference as the GPU reads them; and bad
 * shapes refused.
 */
import { deepStrictEqual, rejects } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { readU32, uploadBuffer } from "../buffers.ts";
import { decodeWeights, encodeWeights, isFloatDtype, type TensorDtype } from "../dtype.ts";
import { dequantize, quantize } from "../quant/formats.ts";
import { moeExpertsRef, moeRouteRef } from "../reference/moe.ts";
import { rmsNormRef } from "../reference/dense.ts";
import { prepareMoeExperts, prepareMoeRoute } from "./moe.ts";
import {
  assertClose,
  assertSumsClose,
  testGpu,
  withErrorScopes,
} from "../../../test/support/gpu.ts";
import {
  asF32,
  f32Buffer,
  outBuffer,
  runRead,
  seeded,
  u32Buffer,
} from "../../../test/support/kernel_harness.ts";

Deno.test("moe_route: softmax, top-k and renormalisation match float64 over odd shapes", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const shapes: [number, number, number][] = [[1, 4, 2], [5, 3, 3], [7, 33, 5], [3, 128, 8], [
      2,
      1,
      1,
    ]];
    for (const [tokens, experts, topK] of shapes) {
      for (const norm of [true, false]) {
        const logits = asF32(seeded(tokens * 31 + experts, tokens * experts, 4));
        // A tie in every row: expert 0's logit repeated at the last expert (the lower index wins).
        for (let t = 0; t < tokens; t++) logits[t * experts + experts - 1] = logits[t * experts]!;
        const ref = moeRouteRef(logits, experts, topK, norm);
        const ids = outBuffer(device, "moe_test:ids", tokens * topK);
        const weights = outBuffer(device, "moe_test:weights", tokens * topK);
        const d = await prepareMoeRoute(device, {
          logits: f32Buffer(device, "moe_test:logits", logits),
          ids,
          weights,
          tokens,
          experts,
          topK,
          norm,
        });
        const w = await runRead(device, [d], weights, tokens * topK);
        const what = `${tokens}x${experts} top-${topK} norm=${norm}`;
        deepStrictEqual([...await readU32(device, ids, tokens * topK)], [...ref.ids], what);
        assertClose(w, ref.weights, 1e-7, 4e-6, what);
      }
    }
  });
});

/** `values` [rows, cols] stored as `dtype`, and the values the GPU decodes from them. */
function stored(dtype: TensorDtype, values: Float64Array, rows: number, cols: number) {
  const bytes = isFloatDtype(dtype)
    ? encodeWeights(values, dtype)
    : quantize(dtype, Float32Array.from(values), rows, cols);
  const decoded = isFloatDtype(dtype)
    ? decodeWeights(bytes, dtype)
    : dequantize(dtype, bytes, rows * cols);
  return { bytes, decoded };
}

const FORMATS: [TensorDtype, number][] = [["f32", 32], ["f16", 32], ["Q8_0", 32], ["Q4_K", 256]];

for (const paths of ["cpu", "gpu"] as const) {
  Deno.test(`moe_experts (${paths} paths): the routed experts' SwiGLU, weighted, added to x`, async () => {
    const { device } = await testGpu(paths);
    await withErrorScopes(device, async () => {
      // The path's own threads per output, and on gpu paths every other sharing too.
      const shares = paths === "cpu" ? [undefined] : [undefined, 2, 64];
      for (
        const [[dtype, block], threadsPerRow] of FORMATS.flatMap((f) =>
          shares.map((t) => [f, t] as const)
        )
      ) {
        // Odd counts: 3 tokens, 5 experts, top-3; hidden and inter whole, odd numbers of blocks.
        const tokens = 3, experts = 5, topK = 3, hidden = 3 * block, inter = block;
        const x = asF32(seeded(1, tokens * hidden, 1));
        const gamma = asF32(seeded(2, hidden, 0.2).map((v) => 1 + v));
        const gate = stored(
          dtype,
          seeded(3, experts * inter * hidden, 0.3),
          experts * inter,
          hidden,
        );
        const up = stored(dtype, seeded(4, experts * inter * hidden, 0.3), experts * inter, hidden);
        const down = stored(
          dtype,
          seeded(5, experts * hidden * inter, 0.3),
          experts * hidden,
          inter,
        );
        // gate_up slab: expert e's gate rows then its up rows.
        const rowBytes = gate.bytes.length / (experts * inter);
        const slab = new Uint8Array(2 * gate.bytes.length);
        for (let e = 0; e < experts; e++) {
          const span = inter * rowBytes;
          slab.set(gate.bytes.subarray(e * span, (e + 1) * span), 2 * e * span);
          slab.set(up.bytes.subarray(e * span, (e + 1) * span), (2 * e + 1) * span);
        }
        const routes = moeRouteRef(seeded(6, tokens * experts, 3), experts, topK, true);
        const want = Float64Array.from(x);
        const matrices = Array.from({ length: experts }, (_, e) => ({
          gate: gate.decoded.subarray(e * inter * hidden, (e + 1) * inter * hidden),
          up: up.decoded.subarray(e * inter * hidden, (e + 1) * inter * hidden),
          down: down.decoded.subarray(e * hidden * inter, (e + 1) * hidden * inter),
        }));
        const normed = rmsNormRef(x, gamma, hidden, 1e-6);
        moeExpertsRef(
          want,
          normed,
          { ids: routes.ids, weights: asF32(routes.weights) },
          matrices,
          hidden,
          inter,
        );
        const xb = f32Buffer(device, "moe_test:x", x);
        const ds = await prepareMoeExperts(device, {
          x: xb,
          norm: { weight: f32Buffer(device, "moe_test:gamma", gamma), eps: 1e-6 },
          gateUp: { buffer: uploadBuffer(device, "moe_test:gate_up", slab), dtype },
          down: { buffer: uploadBuffer(device, "moe_test:down", down.bytes), dtype },
          ids: u32Buffer(device, "moe_test:ids", routes.ids),
          weights: f32Buffer(device, "moe_test:weights", routes.weights),
          act: outBuffer(device, "moe_test:act", tokens * topK * inter),
          tokens,
          hidden,
          inter,
          experts,
          topK,
          ...(threadsPerRow ? { threadsPerRow } : {}),
        });
        const got = await runRead(device, ds, xb, tokens * hidden);
        assertSumsClose(got, want, hidden + inter, 8, `${dtype} ${paths} ${threadsPerRow ?? ""}`);
      }
    });
  });
}

Deno.test("moe kernels: top-k above the experts, or no experts, is an InvalidArgument", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const buf = (n: number) => outBuffer(device, "moe_test:any", n);
    const route = { logits: buf(64), ids: buf(64), weights: buf(64), tokens: 2, norm: true };
    const refused = (what: string) => (e: unknown) =>
      e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(what);
    await rejects(prepareMoeRoute(device, { ...route, experts: 4, topK: 5 }), refused("topK 5"));
    await rejects(prepareMoeRoute(device, { ...route, experts: 0, topK: 1 }), refused("experts"));
  });
});
