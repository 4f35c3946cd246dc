/**
 * Asynchronous read-back of sampled tokens. Each submitted step copies the sampler's results
 * into a staging buffer of its own (reused from a pool), so several steps can be in flight while
 * their tokens travel back; `mapAsync` resolves in submission order.
 */
import { createTrackedBuffer } from "../gpu/memory_ledger.ts";
import { decodeSampled, MAX_TOP_LOGPROBS, type SampledToken } from "../gpu/kernels/sampling.ts";
import type { Sampler } from "../gpu/kernels/sampling.ts";

const TOP_BYTES = 2 * MAX_TOP_LOGPROBS * 4;

export class Readback {
  readonly #pool: GPUBuffer[] = [];
  readonly #live = new Set<GPUBuffer>();
  readonly #bytes: number;
  #made = 0;

  constructor(readonly device: GPUDevice, readonly sampler: Sampler) {
    this.#bytes = sampler.maxSeqs * (8 + TOP_BYTES);
  }

  /**
   * Record the copy of `n` results (and their top alternatives when `withTop`) into a staging
   * buffer; call the returned function after submitting to start reading them.
   */
  encode(
    encoder: GPUCommandEncoder,
    n: number,
    withTop: boolean,
  ): () => Promise<SampledToken[]> {
    const staging = this.#pool.pop() ?? createTrackedBuffer(this.device, {
      label: `engine:readback:${this.#made++}`,
      size: this.#bytes,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    }, "staging");
    this.#live.add(staging);
    const topAt = n * 8;
    encoder.copyBufferToBuffer(this.sampler.result, 0, staging, 0, n * 8);
    if (withTop) encoder.copyBufferToBuffer(this.sampler.top, 0, staging, topAt, n * TOP_BYTES);
    return async () => {
      try {
        await staging.mapAsync(GPUMapMode.READ, 0, topAt + (withTop ? n * TOP_BYTES : 0));
        const bytes = staging.getMappedRange(0, topAt + (withTop ? n * TOP_BYTES : 0)).slice(0);
        staging.unmap();
        this.#pool.push(staging);
        return decodeSampled(bytes.slice(0, topAt), withTop ? bytes.slice(topAt) : undefined, n);
      } catch (e) {
        staging.destroy();
        throw e;
      } finally {
        this.#live.delete(staging);
      }
    };
  }

  destroy(): void {
    for (const b of [...this.#pool, ...this.#live]) b.destroy();
    this.#pool.length = 0;
    this.#live.clear();
  }
}
