/**
 * The DP4A measurement (issue 25, item 4), in web-standard code so that Deno (`dp4a.ts`) and a
 * browser page (`pages/dp4a.ts`, SwiftShader in Chromium) run the same: a Q8_0 decode product
 * with the activations quantized to int8 per 32-block and WGSL's `dot4I8Packed`
 * (`dp4a_probe.wgsl` `dp4a`, plus its `quantize` pass), against its float twin (`floats`: the same
 * kernel, each packed word unpacked and dotted in f32) and Kiln's own Q8_0 matvec on the
 * CPU-adapter path (one thread per row), at SmolLM2-135M's shapes. Each result is first checked
 * against float64: `floats` and Kiln's against W·x, `dp4a` against W·q(x) (x as quantized).
 *
 * @module
 */
import type { Gpu } from "../../src/gpu/device.ts";
import { readF32, storageBuffer, uploadBuffer } from "../../src/gpu/buffers.ts";
import type { Dispatch } from "../../src/gpu/dispatch.ts";
import { prepareMatvec } from "../../src/gpu/product/matvec.ts";
import { dequantize } from "../../src/gpu/formats/registry.ts";
import { randomBlocks } from "../../src/gpu/formats/random_blocks.ts";
import { dispatchTimer } from "../lib/timer.ts";

/** Whether the implementation's WGSL has `dot4I8Packed` (not yet in @webgpu/types' GPU). */
export function hasDp4a(): boolean {
  const gpu = navigator.gpu as GPU & { wgslLanguageFeatures?: ReadonlySet<string> };
  return gpu.wgslLanguageFeatures?.has("packed_4x8_integer_dot_product") ?? false;
}

/** Largest |got - want| over tol + |want| * eps; throws above 1. */
function check(what: string, got: Float32Array, want: Float64Array, tol: number): number {
  let worst = 0;
  want.forEach((
    v,
    i,
  ) => (worst = Math.max(worst, Math.abs(got[i]! - v) / (tol + Math.abs(v) * 1e-4))));
  if (!(worst <= 1)) throw new Error(`${what}: off by ${worst.toFixed(2)}× its bound`);
  return worst;
}

/** y = W v in float64, W [n, k] row-major. */
function product(wf: Float64Array, v: ArrayLike<number>, n: number, k: number): Float64Array {
  const y = new Float64Array(n);
  for (let r = 0; r < n; r++) {
    let s = 0;
    for (let c = 0; c < k; c++) s += wf[r * k + c]! * v[c]!;
    y[r] = s;
  }
  return y;
}

/** x as `quantize` makes it: int8 per 32-block, times the block's scale. */
function quantized(x: Float32Array): Float64Array {
  const out = new Float64Array(x.length);
  for (let b = 0; b < x.length; b += 32) {
    const amax = Math.max(...x.subarray(b, b + 32).map(Math.abs));
    const d = Math.fround(amax / 127);
    for (let i = b; i < b + 32; i++) {
      out[i] = d > 0 ? Math.round(Math.fround(x[i]! * (1 / d))) * d : 0;
    }
  }
  return out;
}

/** The DP4A report of one adapter: a row per shape (`quick`: one small shape). */
export async function dp4aReport(
  gpu: Gpu,
  wgsl: string,
  quick: boolean,
): Promise<Record<string, unknown>> {
  const { device, caps } = gpu;
  const shapes: [number, number][] = quick ? [[96, 576]] : [[1536, 576], [576, 1536], [49152, 576]];
  const iters = (n: number) => quick ? 2 : n > 10000 ? 3 : 20;
  const timer = dispatchTimer(device, caps.timestamps);
  const module = device.createShaderModule({ label: "bench:dp4a", code: wgsl });
  const pipelines = Object.fromEntries(
    await Promise.all(["quantize", "dp4a", "floats"].map(async (entry) =>
      [
        entry,
        await device.createComputePipelineAsync({
          label: `bench:dp4a:${entry}`,
          layout: "auto",
          compute: { module, entryPoint: entry },
        }),
      ] as const
    )),
  );

  const results: Record<string, number | string>[] = [];
  for (const [n, k] of shapes) {
    const bytes = randomBlocks("Q8_0", n * k, n + k);
    const xs = new Float32Array(k).map((_, i) => Math.sin(i * 0.37) * 0.8);
    const w = uploadBuffer(device, "bench:dp4a:w", bytes);
    const x = uploadBuffer(device, "bench:dp4a:x", xs);
    const xq = storageBuffer(device, "bench:dp4a:xq", k);
    const xd = storageBuffer(device, "bench:dp4a:xd", (k / 32) * 4);
    const y = storageBuffer(device, "bench:dp4a:y", n * 4);
    const params = uploadBuffer(
      device,
      "bench:dp4a:params",
      Uint32Array.of(n, k, 0, 0),
      GPUBufferUsage.UNIFORM,
    );
    const dispatch = (entry: string, threads: number): Dispatch => {
      const pipeline = pipelines[entry]!;
      const used = entry === "quantize"
        ? [0, 2, 3, 4]
        : entry === "dp4a"
        ? [0, 1, 3, 4, 5]
        : [0, 1, 2, 5];
      const all = [params, w, x, xq, xd, y];
      return {
        label: `bench:dp4a:${entry}`,
        pipeline,
        bindGroup: device.createBindGroup({
          layout: pipeline.getBindGroupLayout(0),
          entries: used.map((b) => ({ binding: b, resource: { buffer: all[b]! } })),
        }),
        workgroups: [Math.ceil(threads / 64)],
      };
    };
    const quantize = dispatch("quantize", k / 32), dp4a = dispatch("dp4a", n);
    const floats = dispatch("floats", n);
    const kiln = await prepareMatvec(
      device,
      { x, w, y, m: 1, n, k, type: "Q8_0", threadsPerRow: 1 },
      "bench:dp4a:kiln",
    );
    const wf = dequantize("Q8_0", bytes, n * k);
    const exact = product(wf, xs, n, k), viaInt8 = product(wf, quantized(xs), n, k);
    const run = async (ds: Dispatch[]) => {
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass();
      for (const d of ds) {
        pass.setPipeline(d.pipeline);
        pass.setBindGroup(0, d.bindGroup);
        pass.dispatchWorkgroups(d.workgroups[0]);
      }
      pass.end();
      device.queue.submit([enc.finish()]);
      return await readF32(device, y, n);
    };
    const tol = 1e-3 * Math.sqrt(k);
    const errors = {
      dp4a: check(`dp4a ${n}x${k}`, await run([quantize, dp4a]), viaInt8, tol),
      floats: check(`floats ${n}x${k}`, await run([floats]), exact, tol),
      kiln: check(`kiln ${n}x${k}`, await run([kiln]), exact, tol),
    };
    const t = {
      quantize: await timer.time(quantize, iters(n)),
      dp4a: await timer.time(dp4a, iters(n)),
      floats: await timer.time(floats, iters(n)),
      kiln: await timer.time(kiln, iters(n)),
    };
    const row = {
      n,
      k,
      weight_bytes: bytes.byteLength,
      quantize_us: t.quantize * 1e6,
      dp4a_us: t.dp4a * 1e6,
      floats_us: t.floats * 1e6,
      kiln_us: t.kiln * 1e6,
      dp4a_with_quantize_over_floats: (t.dp4a + t.quantize) / t.floats,
      dp4a_with_quantize_over_kiln: (t.dp4a + t.quantize) / t.kiln,
      worst_error_of_bound_dp4a: errors.dp4a,
      worst_error_of_bound_floats: errors.floats,
      worst_error_of_bound_kiln: errors.kiln,
    };
    results.push(row);
    console.error(
      `Q8_0 ${n}x${k}: dp4a ${row.dp4a_us.toFixed(0)} us + quantize ${
        row.quantize_us.toFixed(0)
      } us, floats ${row.floats_us.toFixed(0)} us, kiln ${row.kiln_us.toFixed(0)} us; ` +
        `(dp4a + quantize) / floats ${row.dp4a_with_quantize_over_floats.toFixed(2)}, / kiln ${
          row.dp4a_with_quantize_over_kiln.toFixed(2)
        }`,
    );
    [w, x, xq, xd, y, params].forEach((b) => b.destroy());
  }
  return {
    bench: "dp4a",
    adapter: caps.adapter,
    date: new Date().toISOString(),
    timer: timer.kind,
    note: "time ratios > 1: dot4I8Packed (with the activation's quantize pass) is slower",
    results,
  };
}
