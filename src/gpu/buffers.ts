/**
 * Labelled buffer helpers: upload, allocate, read back. Each buffer is counted on the device's
 * memory ledger under a kind (`memory_ledger.ts`).
 */
import { createTrackedBuffer, type GpuMemoryKind } from "./memory_ledger.ts";

/** Usage of storage buffers: STORAGE, COPY_SRC, COPY_DST. */
export const STORAGE: number = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC |
  GPUBufferUsage.COPY_DST;
/** Usage of uniform buffers: UNIFORM, COPY_DST. */
export const UNIFORM: number = GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST;

/** A storage buffer of `size` bytes (rounded up to 4, at least 4), counted as `kind`. */
export function storageBuffer(
  device: GPUDevice,
  label: string,
  size: number,
  kind: GpuMemoryKind = "scratch",
): GPUBuffer {
  const bytes = Math.max(4, Math.ceil(size / 4) * 4);
  return createTrackedBuffer(device, { label, size: bytes, usage: STORAGE }, kind);
}

/** A buffer holding `data`, padded to a multiple of 4 bytes, counted as `kind`. */
export function uploadBuffer(
  device: GPUDevice,
  label: string,
  data: ArrayBufferView,
  usage: number = STORAGE,
  kind: GpuMemoryKind = "other",
): GPUBuffer {
  const size = Math.max(4, Math.ceil(data.byteLength / 4) * 4);
  const buffer = createTrackedBuffer(device, { label, size, usage, mappedAtCreation: true }, kind);
  new Uint8Array(buffer.getMappedRange()).set(
    new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
  );
  buffer.unmap();
  return buffer;
}

/** Copy `size` bytes of `src` (from `offset`) to the CPU. */
export async function readBuffer(
  device: GPUDevice,
  src: GPUBuffer,
  size = src.size,
  offset = 0,
): Promise<ArrayBuffer> {
  const staging = createTrackedBuffer(device, {
    label: `${src.label}:readback`,
    size,
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  }, "staging");
  const encoder = device.createCommandEncoder({ label: `${src.label}:readback` });
  encoder.copyBufferToBuffer(src, offset, staging, 0, size);
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const out = staging.getMappedRange().slice(0);
  staging.unmap();
  staging.destroy();
  return out;
}

/** Read `count` f32 values (default: the whole buffer) back to the CPU. */
export async function readF32(
  device: GPUDevice,
  src: GPUBuffer,
  count?: number,
): Promise<Float32Array> {
  return new Float32Array(await readBuffer(device, src, (count ?? src.size / 4) * 4));
}

/** Read `count` u32 values (default: the whole buffer) back to the CPU. */
export async function readU32(
  device: GPUDevice,
  src: GPUBuffer,
  count?: number,
): Promise<Uint32Array> {
  return new Uint32Array(await readBuffer(device, src, (count ?? src.size / 4) * 4));
}
