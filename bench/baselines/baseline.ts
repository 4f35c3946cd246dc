/**
 * Kernels Kiln replaced, kept so that a benchmark can time the old and the new side by side in
 * one run on one adapter: `matmul.wgsl` (the 16×16 tiled prefill product before `gemm.wgsl`),
 * `matvec.wgsl` (the float matrix-vector product before float weights became formats of the
 * product kernels),
 * `attention.wgsl` (per-query-head attention before the GQA kernel and `rope_kv`) and
 * `sampling.wgsl` (top-k/top-p thresholds by 32-step bisection before the radix select).
 */
import { UNIFORM, uploadBuffer } from "../../src/gpu/buffers.ts";
import type { Dispatch } from "../../src/gpu/dispatch.ts";

const modules = new Map<string, GPUShaderModule>();

/** A dispatch of `entry` in `bench/baselines/<file>.wgsl` over `buffers` (binding → buffer). */
export async function baselineDispatch(
  device: GPUDevice,
  file: "matmul" | "attention" | "matvec",
  entry: string,
  spec: {
    constants?: Record<string, number>;
    uniform: ArrayBuffer;
    buffers: Record<number, GPUBuffer>;
    workgroups: Dispatch["workgroups"];
  },
): Promise<Dispatch> {
  let module = modules.get(file);
  if (module === undefined) {
    const code = await Deno.readTextFile(new URL(`./${file}.wgsl`, import.meta.url));
    modules.set(file, module = device.createShaderModule({ label: `baseline:${file}`, code }));
  }
  const label = `baseline:${file}:${entry}`;
  const pipeline = await device.createComputePipelineAsync({
    label,
    layout: "auto",
    compute: { module, entryPoint: entry, constants: spec.constants ?? {} },
  });
  const uniform = uploadBuffer(device, `${label}:params`, new Uint8Array(spec.uniform), UNIFORM);
  const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: uniform } }];
  for (const [i, buffer] of Object.entries(spec.buffers)) {
    entries.push({ binding: Number(i), resource: { buffer } });
  }
  const bindGroup = device.createBindGroup({
    label,
    layout: pipeline.getBindGroupLayout(0),
    entries,
  });
  return { label, pipeline, bindGroup, workgroups: spec.workgroups };
}
