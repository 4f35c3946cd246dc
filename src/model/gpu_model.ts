/**
 * A checkpoint on the GPU: weights uploaded one tensor at a time (no second full copy in
 * memory), a paged KV cache, and replayable forward plans (see `forward.ts`).
 */
import { EngineError } from "../contract/errors.ts";
import type { Gpu } from "../gpu/device.ts";
import { storageBuffer, uploadBuffer } from "../gpu/buffers.ts";
import type { WeightDtype } from "../gpu/dtype.ts";
import { type ModelConfig, parseConfig } from "./config.ts";
import { ropeInvFreq } from "./rope.ts";
import { readCheckpoint, type TensorInfo } from "./safetensors.ts";
import { missingFile, type ModelFiles, readText } from "./source.ts";
import { checkFits, mapWeights, type ModelWeights, weightList } from "./weights.ts";

export interface GpuTensor {
  buffer: GPUBuffer;
  dtype: WeightDtype;
}

export type LoadProgress = (loadedBytes: number, totalBytes: number, tensor: string) => void;

export interface LoadOptions {
  onProgress?: LoadProgress;
  /** KV cache blocks to allocate (default: enough for one full context). */
  kvBlocks?: number;
  /** Tokens per KV block (default 16). */
  blockSize?: number;
  /** Bytes the weights may take (default: no limit beyond the device's buffer limits). */
  weightBudget?: number;
}

export class GpuModel {
  readonly #owned: GPUBuffer[] = [];
  readonly tensors = new Map<TensorInfo, GpuTensor>();
  readonly kCache: GPUBuffer[] = [];
  readonly vCache: GPUBuffer[] = [];
  readonly invFreq: GPUBuffer;

  private constructor(
    readonly gpu: Gpu,
    readonly config: ModelConfig,
    readonly weights: ModelWeights,
    readonly blockSize: number,
    readonly kvBlocks: number,
  ) {
    this.invFreq = this.own(
      uploadBuffer(
        gpu.device,
        "rope:inv_freq",
        Float32Array.from(ropeInvFreq(config.headDim, config.ropeTheta, config.ropeScaling)),
      ),
    );
  }

  /** Read the config and headers, check everything, then upload the weights. */
  static async load(gpu: Gpu, files: ModelFiles, options: LoadOptions = {}): Promise<GpuModel> {
    const text = await readText(files, "config.json");
    if (text === undefined) throw missingFile(files, "config.json");
    const config = parseConfig(text);
    const tensors = await readCheckpoint((name) => files.open(name));
    const weights = mapWeights(config, tensors);
    const list = weightList(weights);
    checkFits(list, gpu.caps, options.weightBudget);
    const blockSize = options.blockSize ?? 16;
    const kvBlocks = options.kvBlocks ?? Math.ceil(config.maxPositionEmbeddings / blockSize);
    const kvBytes = kvBlocks * blockSize * config.numKvHeads * config.headDim * 4;
    if (kvBytes > Math.min(gpu.caps.maxStorageBufferBindingSize, gpu.caps.maxBufferSize)) {
      throw new EngineError(
        "ResourceExhausted",
        `a KV cache layer of ${kvBlocks} blocks needs ${kvBytes} bytes; one buffer may hold ${gpu.caps.maxStorageBufferBindingSize}`,
      );
    }
    const model = new GpuModel(gpu, config, weights, blockSize, kvBlocks);
    try {
      await model.#upload(list, options.onProgress);
      for (let l = 0; l < config.numLayers; l++) {
        model.kCache.push(model.own(storageBuffer(gpu.device, `kv:k${l}`, kvBytes)));
        model.vCache.push(model.own(storageBuffer(gpu.device, `kv:v${l}`, kvBytes)));
      }
    } catch (e) {
      model.destroy();
      throw e;
    }
    return model;
  }

  async #upload(list: TensorInfo[], onProgress?: LoadProgress): Promise<void> {
    const total = list.reduce((n, t) => n + t.length, 0);
    let loaded = 0;
    for (const t of list) {
      const bytes = await t.source.read(t.offset, t.length);
      if (bytes.length !== t.length) {
        throw EngineError.invalidArgument(
          `tensor ${t.name}: read ${bytes.length} of ${t.length} bytes (truncated file?)`,
        );
      }
      this.tensors.set(t, {
        buffer: this.own(uploadBuffer(this.gpu.device, t.name, bytes)),
        dtype: t.dtype,
      });
      loaded += t.length;
      onProgress?.(loaded, total, t.name);
    }
  }

  own(buffer: GPUBuffer): GPUBuffer {
    this.#owned.push(buffer);
    return buffer;
  }

  tensor(t: TensorInfo): GpuTensor {
    const g = this.tensors.get(t);
    if (g === undefined) throw new Error(`tensor ${t.name} was not uploaded`);
    return g;
  }

  /** Free every buffer this model owns. Safe to call twice. */
  destroy(): void {
    for (const b of this.#owned.splice(0)) b.destroy();
  }
}
