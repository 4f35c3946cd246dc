/**
 * Shared plumbing for kernel wrappers: uniforms, bind groups and 1-D grids, and the checks every
 * wrapper makes of its arguments (counts, buffer sizes against the device's binding limit), the
 * placeholder buffer for unused optional bindings and a format's lookup-table binding.
 */
import { EngineError } from "../../contract/errors.ts";
import { storageBuffer, UNIFORM, uploadBuffer } from "../buffers.ts";
import type { WeightFormat } from "../formats/format.ts";
import { quantTableBuffer } from "../formats/tables.ts";
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

/** Workgroups of 8 for `threads` threads, over x and y when x would pass the limit. */
export function groupsOf8(device: GPUDevice, threads: number): readonly [number, number] {
  const groups = Math.ceil(threads / 8);
  const limit = device.limits.maxComputeWorkgroupsPerDimension;
  return groups <= limit ? [groups, 1] : [limit, Math.ceil(groups / limit)];
}

/** Workgroups for `count` threads in groups of 256, split over x and y when needed. */
export function grid256(device: GPUDevice, count: number): readonly [number, number] {
  return grid(device, Math.ceil(count / 256));
}

const placeholders = new WeakMap<GPUDevice, GPUBuffer>();

/** The shader declares every optional binding (bias, norm weight); unused ones read this. */
export function placeholder(device: GPUDevice): GPUBuffer {
  let b = placeholders.get(device);
  if (b === undefined) {
    placeholders.set(device, b = storageBuffer(device, "kernel:unused", 16, "other"));
  }
  return b;
}

/** Binding 7: the format's lookup table, for the formats that have one. */
export async function tableBinding(
  device: GPUDevice,
  f: WeightFormat,
): Promise<Record<number, GPUBuffer>> {
  return f.table ? { 7: await quantTableBuffer(device, f.table) } : {};
}

/** Throw an invalid-argument error `what: message`. */
export function fail(what: string, message: string): never {
  throw EngineError.invalidArgument(`${what}: ${message}`);
}

/** Refuse `v` (named `name`) unless it is an integer of at least `min`. */
export function checkCount(what: string, name: string, v: number, min: number): void {
  if (!Number.isInteger(v) || v < min) {
    fail(what, `${name} must be an integer >= ${min}, got ${v}`);
  }
}

/** Refuse buffer `b` when it holds fewer than `bytes` or `bytes` exceed one binding. */
export function checkBuffer(
  device: GPUDevice,
  what: string,
  name: string,
  b: GPUBuffer,
  bytes: number,
): void {
  if (b.size < bytes) fail(what, `${name} holds ${b.size} bytes, needs ${bytes}`);
  if (bytes > device.limits.maxStorageBufferBindingSize) {
    fail(
      what,
      `${name} needs ${bytes} bytes, over this device's binding limit of ${device.limits.maxStorageBufferBindingSize}`,
    );
  }
}
