/**
 * Where a device's GPU memory goes: every buffer Kiln creates goes through
 * {@linkcode createTrackedBuffer}, which adds its size to the device's ledger under a kind, and
 * takes it off again when the buffer is destroyed (once, however often `destroy()` is called).
 * Compute pipelines are counted too (their memory is the driver's and WebGPU does not say it).
 *
 * Kinds: `weights` (the checkpoint's tensors), `kv` (the KV cache), `state` (recurrent layers'
 * per-sequence state, beside the KV cache in hybrid models), `scratch` (activations,
 * logits, the token store, sampler and other per-step buffers), `staging` (mappable buffers for
 * upload and read-back), `other` (uniforms, RoPE tables, quantization tables, placeholders).
 *
 * @module
 */

/** What a buffer holds. */
export type GpuMemoryKind = "weights" | "kv" | "state" | "scratch" | "staging" | "other";

/** The kinds, in report order. */
export const GPU_MEMORY_KINDS: readonly GpuMemoryKind[] = [
  "weights",
  "kv",
  "state",
  "scratch",
  "staging",
  "other",
];

/** A ledger's numbers: live bytes per kind, their total, the highest total seen, pipelines. */
export type GpuMemorySnapshot = Record<GpuMemoryKind, number> & {
  total: number;
  peak: number;
  pipelines: number;
};

/** One device's live GPU buffer bytes by kind. */
export class GpuMemoryLedger {
  readonly #bytes: Record<GpuMemoryKind, number> = {
    weights: 0,
    kv: 0,
    state: 0,
    scratch: 0,
    staging: 0,
    other: 0,
  };
  #total = 0;
  #peak = 0;
  /** Compute pipelines created on the device. */
  pipelines = 0;

  /** Count `bytes` more of `kind`. */
  add(kind: GpuMemoryKind, bytes: number): void {
    this.#bytes[kind] += bytes;
    this.#total += bytes;
    this.#peak = Math.max(this.#peak, this.#total);
  }

  /** Count `bytes` fewer of `kind`. */
  remove(kind: GpuMemoryKind, bytes: number): void {
    this.#bytes[kind] -= bytes;
    this.#total -= bytes;
  }

  /** Live bytes of `kind`. */
  bytes(kind: GpuMemoryKind): number {
    return this.#bytes[kind];
  }

  /** The numbers now. */
  snapshot(): GpuMemorySnapshot {
    return { ...this.#bytes, total: this.#total, peak: this.#peak, pipelines: this.pipelines };
  }
}

const ledgers = new WeakMap<GPUDevice, GpuMemoryLedger>();

/** The ledger of `device` (made on first use). */
export function memoryLedger(device: GPUDevice): GpuMemoryLedger {
  let l = ledgers.get(device);
  if (l === undefined) ledgers.set(device, l = new GpuMemoryLedger());
  return l;
}

/**
 * `device.createBuffer(descriptor)`, its size counted under `kind` on the device's ledger until
 * it is destroyed. Every buffer Kiln creates is made here.
 */
export function createTrackedBuffer(
  device: GPUDevice,
  descriptor: GPUBufferDescriptor,
  kind: GpuMemoryKind,
): GPUBuffer {
  const buffer = device.createBuffer(descriptor);
  const ledger = memoryLedger(device);
  const size = descriptor.size;
  ledger.add(kind, size);
  const destroy = buffer.destroy.bind(buffer);
  let live = true;
  Object.defineProperty(buffer, "destroy", {
    configurable: true,
    value: (): undefined => {
      if (live) {
        live = false;
        ledger.remove(kind, size);
      }
      return destroy();
    },
  });
  return buffer;
}
