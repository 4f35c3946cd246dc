/**
 * The mixture-of-experts kernels against their float64 references (`reference/moe.ts`): routing
 * over odd expert counts and top-k, renormalised or not (ids exactly, weights within f32
 * rounding); the routed experts over F32, F16, Q8_0 and Q4_K weights and odd widths, on both
 * kernel paths' devices, the weights decoded for the reference as the GPU reads them; gpt-oss's
 * per-expert biases and clamped SwiGLU (MXFP4, BF16, Q8_0, Q4_K); slabs split into buffers of
 * whole experts (1, 2, 3 and 5 buffers, uneven last ones), each pass run per buffer, against the
 * same reference; and bad shapes, activation settings and split slabs refused.
 */
import { deepStrictEqual, rejects, throws } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { readU32, uploadBuffer } from "../buffers.ts";
import { decodeWeights, encodeWeights, isFloatDtype, type TensorDtype } from "../dtype.ts";
import { dequantize, quantize } from "../formats/registry.ts";
import { productFormat, productRowBytes } from "../formats/registry.ts";
import { moeExpertsRef, moeRouteRef } from "../../reference/kernels/moe.ts";
import { rmsNormRef } from "../../reference/kernels/dense.ts";
import { expertChunks, prepareMoeExperts, prepareMoeRoute } from "./moe.ts";
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
        if (norm) {
          // Renormalised softmax over all = softmax over the chosen logits (gpt-oss's gating).
          const chosen = Array.from(ref.ids, (e, i) => logits[Math.floor(i / topK) * experts + e]!);
          const direct = chosen.map((l, i) => {
            const row = chosen.slice(i - (i % topK), i - (i % topK) + topK);
            return Math.exp(l) / row.reduce((n, v) => n + Math.exp(v), 0);
          });
          assertClose(ref.weights, direct, 1e-12, 1e-12, `${what}: softmax over the top-k`);
        }
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

/** What the expert kernel is asked for beyond the plain SwiGLU experts. */
interface ExpertOptions {
  /** Threads per output (default: the path's). */
  threadsPerRow?: number;
  /** The clamped SwiGLU with this limit. */
  swigluLimit?: number;
  /** Per-expert gate/up/down biases. */
  biases?: boolean;
  /** Split each slab into buffers of whole experts of at most this many bytes. */
  maxSlabBytes?: number;
}

/** `bytes` ([experts] equal spans) as buffers of whole experts, at most `limit` bytes each. */
function slabParts(
  device: GPUDevice,
  name: string,
  bytes: Uint8Array,
  experts: number,
  limit = Infinity,
) {
  const per = bytes.length / experts;
  let first = 0;
  return expertChunks(name, experts, per, limit).map((n) => {
    const part = bytes.subarray(first * per, (first + n) * per);
    first += n;
    return {
      buffer: uploadBuffer(device, `${name}[${first - n}..${first - 1}]`, part),
      experts: n,
    };
  });
}

/**
 * The routed experts over `dtype` weights on `device`, and the float64 reference on the weights
 * as the GPU decodes them: 3 tokens, 5 experts, top-3, hidden and inter whole, odd numbers of
 * blocks. Also the share of gate and up inputs past the limit (0 without one).
 */
async function expertsCase(
  device: GPUDevice,
  dtype: TensorDtype,
  block: number,
  o: ExpertOptions = {},
) {
  const tokens = 3, experts = 5, topK = 3, hidden = 3 * block, inter = block;
  const x = asF32(seeded(1, tokens * hidden, 1));
  const gamma = asF32(seeded(2, hidden, 0.2).map((v) => 1 + v));
  const gate = stored(dtype, seeded(3, experts * inter * hidden, 0.3), experts * inter, hidden);
  const up = stored(dtype, seeded(4, experts * inter * hidden, 0.3), experts * inter, hidden);
  const down = stored(dtype, seeded(5, experts * hidden * inter, 0.3), experts * hidden, inter);
  // gate_up slab: expert e's gate rows then its up rows; its biases likewise.
  const rowBytes = gate.bytes.length / (experts * inter);
  const slab = new Uint8Array(2 * gate.bytes.length);
  for (let e = 0; e < experts; e++) {
    const span = inter * rowBytes;
    slab.set(gate.bytes.subarray(e * span, (e + 1) * span), 2 * e * span);
    slab.set(up.bytes.subarray(e * span, (e + 1) * span), (2 * e + 1) * span);
  }
  const gateBias = asF32(seeded(7, experts * inter, 1.5));
  const upBias = asF32(seeded(8, experts * inter, 1.5));
  const downBias = asF32(seeded(9, experts * hidden, 0.5));
  const routes = moeRouteRef(seeded(6, tokens * experts, 3), experts, topK, true);
  const slice = (v: Float64Array, e: number, n: number) => v.subarray(e * n, (e + 1) * n);
  const matrices = Array.from({ length: experts }, (_, e) => ({
    gate: slice(gate.decoded, e, inter * hidden),
    up: slice(up.decoded, e, inter * hidden),
    down: slice(down.decoded, e, hidden * inter),
    ...(o.biases
      ? {
        gateBias: slice(gateBias, e, inter),
        upBias: slice(upBias, e, inter),
        downBias: slice(downBias, e, hidden),
      }
      : {}),
  }));
  const normed = rmsNormRef(x, gamma, hidden, 1e-6);
  const f32Routes = { ids: routes.ids, weights: asF32(routes.weights) };
  const act = o.swigluLimit
    ? { activation: "swiglu_oai" as const, swigluLimit: o.swigluLimit }
    : { activation: "silu" as const };
  const want = Float64Array.from(x);
  moeExpertsRef(want, normed, f32Routes, matrices, hidden, inter, act);
  // The gate and up inputs of the routed experts, to see the limit bite.
  let past = 0;
  for (let i = 0; i < tokens * topK; i++) {
    const m = matrices[routes.ids[i]!]!, t = Math.floor(i / topK);
    for (let r = 0; r < inter; r++) {
      let g = m.gateBias?.[r] ?? 0, u = m.upBias?.[r] ?? 0;
      for (let k = 0; k < hidden; k++) {
        g += normed[t * hidden + k]! * m.gate[r * hidden + k]!;
        u += normed[t * hidden + k]! * m.up[r * hidden + k]!;
      }
      if (o.swigluLimit && g > o.swigluLimit) past++;
      if (o.swigluLimit && Math.abs(u) > o.swigluLimit) past++;
    }
  }
  const biasGateUp = new Float64Array(experts * 2 * inter);
  for (let e = 0; e < experts; e++) {
    biasGateUp.set(slice(gateBias, e, inter), 2 * e * inter);
    biasGateUp.set(slice(upBias, e, inter), (2 * e + 1) * inter);
  }
  const xb = f32Buffer(device, "moe_test:x", x);
  const ds = await prepareMoeExperts(device, {
    x: xb,
    norm: { weight: f32Buffer(device, "moe_test:gamma", gamma), eps: 1e-6 },
    gateUp: { parts: slabParts(device, "moe_test:gate_up", slab, experts, o.maxSlabBytes), dtype },
    down: { parts: slabParts(device, "moe_test:down", down.bytes, experts, o.maxSlabBytes), dtype },
    ids: u32Buffer(device, "moe_test:ids", routes.ids),
    weights: f32Buffer(device, "moe_test:weights", routes.weights),
    act: outBuffer(device, "moe_test:act", tokens * topK * inter),
    tokens,
    hidden,
    inter,
    experts,
    topK,
    ...(o.threadsPerRow ? { threadsPerRow: o.threadsPerRow } : {}),
    ...(o.swigluLimit ? { activation: "swiglu_oai" as const, swigluLimit: o.swigluLimit } : {}),
    ...(o.biases
      ? {
        biases: {
          gateUp: f32Buffer(device, "moe_test:gate_up_bias", biasGateUp),
          down: f32Buffer(device, "moe_test:down_bias", downBias),
        },
      }
      : {}),
  });
  const got = await runRead(device, ds, xb, tokens * hidden);
  const labels = ds.map((d) => d.label);
  return { got, want, k: hidden + inter, past: past / (2 * tokens * topK * inter), labels };
}

for (const paths of ["cpu", "gpu"] as const) {
  Deno.test(`moe_experts (${paths} paths): the routed experts' SwiGLU, weighted, added to x`, async () => {
    const { device } = await testGpu(paths);
    await withErrorScopes(device, async () => {
      // The path's own threads per output, and on gpu paths every other sharing too.
      const shares = paths === "cpu" ? [undefined] : [undefined, 2, 64];
      for (const [dtype, block] of FORMATS) {
        for (const threadsPerRow of shares) {
          const r = await expertsCase(device, dtype, block, threadsPerRow ? { threadsPerRow } : {});
          assertSumsClose(r.got, r.want, r.k, 8, `${dtype} ${paths} ${threadsPerRow ?? ""}`);
        }
      }
    });
  });

  // gpt-oss's experts: biases on gate, up and down, and the clamped SwiGLU with a limit low
  // enough that a good share of the gate and up inputs pass it; MXFP4 (its experts' format)
  // among float and block formats.
  Deno.test(`moe_experts (${paths} paths): per-expert biases and the clamped SwiGLU, MXFP4 too`, async () => {
    const { device } = await testGpu(paths);
    await withErrorScopes(device, async () => {
      const shares = paths === "cpu" ? [undefined] : [undefined, 64];
      const formats: [TensorDtype, number][] = [
        ["MXFP4", 32],
        ["bf16", 32],
        ["Q8_0", 32],
        ["Q4_K", 256],
      ];
      for (const [dtype, block] of formats) {
        for (const threadsPerRow of shares) {
          const what = `${dtype} ${paths} ${threadsPerRow ?? ""}`;
          const o = {
            swigluLimit: 1.25,
            biases: true,
            ...(threadsPerRow ? { threadsPerRow } : {}),
          };
          const r = await expertsCase(device, dtype, block, o);
          if (!(r.past > 0.1)) throw new Error(`${what}: only ${r.past} of the inputs clamped`);
          assertSumsClose(r.got, r.want, r.k, 8, `${what} biased, clamped`);
          const bare = await expertsCase(device, dtype, block, { ...o, biases: false });
          assertSumsClose(bare.got, bare.want, bare.k, 8, `${what} clamped`);
          const moved = r.want.reduce((m, w, i) => Math.max(m, Math.abs(w - bare.want[i]!)), 0);
          if (!(moved > 0.1)) throw new Error(`${what}: the biases move x by only ${moved}`);
        }
      }
    });
  });
}

/**
 * The slabs split into buffers of whole experts, each pass run once per buffer, against the
 * same float64 reference: split limits that are whole-expert multiples plus half an expert
 * (the split rounds down), giving the 5 experts' gate/up slab 5, 5, 3 and 2 buffers (3 = 2+2+1,
 * 2 = 3+2) and the down slab (half the bytes per expert) 3, 2, 1 and 1; gpt-oss's biases and
 * clamped SwiGLU on for MXFP4 and Q4_K, plain SwiGLU for Q8_0 and F16. One buffer per slab is
 * two dispatches, as before the split.
 */
for (const paths of ["cpu", "gpu"] as const) {
  Deno.test(`moe_experts (${paths} paths): slabs split into buffers of whole experts sum to the whole`, async () => {
    const { device } = await testGpu(paths);
    await withErrorScopes(device, async () => {
      const shares = paths === "cpu" ? [undefined] : [undefined, 64];
      const cases: [TensorDtype, number, ExpertOptions][] = [
        ["MXFP4", 32, { swigluLimit: 1.25, biases: true }],
        ["Q4_K", 256, { swigluLimit: 1.25, biases: true }],
        ["Q8_0", 32, {}],
        ["f16", 32, {}],
      ];
      const splits: [number, number, number][] = [[2.5, 5, 3], [3.5, 5, 2], [5.5, 3, 1], [
        6.5,
        2,
        1,
      ]];
      for (const [dtype, block, o] of cases) {
        // Bytes of one expert's down matrix [hidden = 3·block, inter = block] (gate/up: twice).
        const downBytes = 3 * block * productRowBytes(productFormat(dtype), block);
        for (const threadsPerRow of shares) {
          const t = threadsPerRow ? { threadsPerRow } : {};
          const whole = await expertsCase(device, dtype, block, { ...o, ...t });
          deepStrictEqual(whole.labels, ["moe_experts:gate_up", "moe_experts:down"]);
          for (const [times, gateUps, downs] of splits) {
            const what = `${dtype} ${paths} ${threadsPerRow ?? ""} split at ${times} experts`;
            const r = await expertsCase(device, dtype, block, {
              ...o,
              ...t,
              maxSlabBytes: times * downBytes,
            });
            const count = (pass: string) => r.labels.filter((l) => l.includes(pass)).length;
            deepStrictEqual([count(":gate_up["), count(":down")], [gateUps, downs], what);
            assertSumsClose(r.got, r.want, r.k, 8, what);
          }
        }
      }
    });
  });
}

Deno.test("moe kernels: top-k above the experts, no experts, no clamp limit or short biases is an InvalidArgument", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const buf = (n: number) => outBuffer(device, "moe_test:any", n);
    const route = { logits: buf(64), ids: buf(64), weights: buf(64), tokens: 2, norm: true };
    const refused = (what: string) => (e: unknown) =>
      e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(what);
    await rejects(prepareMoeRoute(device, { ...route, experts: 4, topK: 5 }), refused("topK 5"));
    await rejects(prepareMoeRoute(device, { ...route, experts: 0, topK: 1 }), refused("experts"));
    const slab = { parts: [{ buffer: buf(4096), experts: 2 }], dtype: "f32" as const };
    const experts = {
      x: buf(64),
      norm: { weight: buf(64), eps: 1e-6 },
      gateUp: slab,
      down: slab,
      ids: buf(4),
      weights: buf(4),
      act: buf(64),
      tokens: 1,
      hidden: 32,
      inter: 32,
      experts: 2,
      topK: 1,
    };
    await rejects(
      prepareMoeExperts(device, { ...experts, activation: "swiglu_oai" }),
      refused("swigluLimit"),
    );
    await rejects(
      prepareMoeExperts(device, { ...experts, activation: "swiglu_oai", swigluLimit: -7 }),
      refused("swigluLimit"),
    );
    await rejects(
      prepareMoeExperts(device, { ...experts, biases: { gateUp: buf(64), down: buf(64) } }),
      refused("gate/up biases"),
    );
    // Split slabs: parts must hold every expert between them, each part its experts' bytes.
    const split = (n: number[]) => ({
      parts: n.map((experts) => ({ buffer: buf(experts * 4096), experts })),
      dtype: "f32" as const,
    });
    await rejects(
      prepareMoeExperts(device, { ...experts, down: split([1, 2]) }),
      refused("down's parts hold 3 experts, not 2"),
    );
    await rejects(
      prepareMoeExperts(device, { ...experts, gateUp: split([]) }),
      refused("gateUp has no buffers"),
    );
    await rejects(
      prepareMoeExperts(device, {
        ...experts,
        gateUp: {
          parts: [{ buffer: buf(2048), experts: 1 }, { buffer: buf(1024), experts: 1 }],
          dtype: "f32",
        },
      }),
      refused("gateUp part 1 holds 4096 bytes, needs 8192"),
    );
  });
});

Deno.test("expertChunks: whole experts per buffer, the last the rest; an expert past the limit is ResourceExhausted naming the slab", () => {
  deepStrictEqual(expertChunks("s", 128, 1000, 128_000), [128]);
  deepStrictEqual(expertChunks("s", 128, 1000, 127_999), [127, 1]);
  deepStrictEqual(expertChunks("s", 5, 10, 25), [2, 2, 1]);
  deepStrictEqual(expertChunks("s", 5, 10, Infinity), [5]);
  throws(
    () => expertChunks("blk.3.ffn_gate_up", 4, 1001, 1000),
    (e: unknown) =>
      e instanceof EngineError && e.type === "ResourceExhausted" &&
      e.message.includes("blk.3.ffn_gate_up") && e.message.includes("1001") &&
      e.message.includes("1000"),
  );
});
