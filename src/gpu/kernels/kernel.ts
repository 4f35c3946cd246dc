/** Shared plumbing for kernel wrappers: uniforms, bind groups and 1-D grids. */
import { UNIFORM, uploadBuffer } from "../buffers.ts";
import type { Dispatch } from "../dispatch.ts";
import { grid } from "../dispatch.ts";
import { computePipeline } from "../shader.ts";

/** A dispatch plus the uniform buffer it owns (destroy it with the dispatch). */
export interface KernelDispatch extends Dispatch {
  /** The buffer holding the kernel's uniform parameters (binding 0). */
  uniform: GPUBuffer;
}

/** What {@linkcode prepareKernel} needs to build one dispatch. */
export interface KernelSpec {
  /** Label of the dispatch and of the GPU objects it creates. */
  label: string;
  /**
   * The shader variant: a file name under `shaders/` without `.wgsl`, or a composed
   * `file:param=value` variant (`../shader_compose.ts`).
   */
  shader: string;
  /** The entry point. */
  entry: string;
  /** Values of the shader's `override` constants. */
  constants?: Record<string, number>;
  /** Uniform words at binding 0 (u32 unless listed in `floats`). */
  uniform: readonly number[];
  /** Indices of `uniform` that are f32. */
  floats?: readonly number[];
  /** Storage buffers by binding number. */
  buffers: Readonly<Record<number, GPUBuffer>>;
  /** Workgroup counts in x, y, z. */
  workgroups: readonly [number, number?, number?];
}

/** Build the pipeline (cached per device), upload the uniform words and bind the buffers. */
export async function prepareKernel(device: GPUDevice, spec: KernelSpec): Promise<KernelDispatch> {
  const pipeline = await computePipeline(device, spec.shader, spec.entry, spec.constants);
  const words = new ArrayBuffer(Math.ceil(spec.uniform.length / 4) * 16);
  const u32 = new Uint32Array(words);
  const f32 = new Float32Array(words);
  spec.uniform.forEach((v, i) => {
    if (spec.floats?.includes(i)) f32[i] = v;
    else u32[i] = v;
  });
  const uniform = uploadBuffer(device, `${spec.label}:params`, new Uint8Array(words), UNIFORM);
  const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: uniform } }];
  for (const [binding, buffer] of Object.entries(spec.buffers)) {
    entries.push({ binding: Number(binding), resource: { buffer } });
  }
  const bindGroup = device.createBindGroup({
    label: `${spec.label}:bind`,
    layout: pipeline.getBindGroupLayout(0),
    entries,
  });
  return { label: spec.label, pipeline, bindGroup, workgroups: spec.workgroups, uniform };
}

/** Workgroups for `count` threads in groups of 256, split over x and y when needed. */
export function grid256(device: GPUDevice, count: number): readonly [number, number] {
  return grid(device, Math.ceil(count / 256));
}
