/**
 * A checkpoint on the GPU: weights uploaded one tensor at a time (no second full copy in
 * memory), a paged KV cache, and replayable forward plans (see `forward.ts`).
 *
 * The layout is the one the fused decode step reads: q, k and v stacked into one [q+2kv, h]
 * matrix (and their biases into one vector), gate and up into one [2i, h] matrix, and the norm
 * weights widened to f32 (they are read alongside x inside the products).
 */
import { EngineError } from "../contract/errors.ts";
import type { Gpu } from "../gpu/device.ts";
import { STORAGE, storageBuffer, uploadBuffer } from "../gpu/buffers.ts";
import { decodeWeights, DTYPE_BYTES, encodeWeights, type WeightDtype } from "../gpu/dtype.ts";
import { type ModelConfig, parseConfig } from "./config.ts";
import { kvBytesPerElement, type KvDtype } from "../gpu/kernels/attention.ts";
import { ropeInvFreq } from "./rope.ts";
import { readCheckpoint, type TensorInfo } from "./safetensors.ts";
import { missingFile, type ModelFiles, readText } from "./source.ts";
import { checkFits, mapWeights, type ModelWeights, weightList } from "./weights.ts";

export interface GpuTensor {
  buffer: GPUBuffer;
  dtype: WeightDtype;
}

/** One decoder layer's weights as the forward pass reads them. */
export interface GpuLayer {
  /** RMSNorm weights, f32. */
  inputNorm: GPUBuffer;
  postNorm: GPUBuffer;
  /** [q; k; v] stacked: [heads·head_dim + 2·kv_heads·head_dim, hidden]. */
  qkv: GpuTensor;
  qkvBias?: GpuTensor;
  o: GpuTensor;
  /** [gate; up] stacked: [2·intermediate, hidden]. */
  gateUp: GpuTensor;
  down: GpuTensor;
}

/** Tensors uploaded into one buffer, one after the other (widened to f32 if dtypes differ). */
interface Upload {
  label: string;
  parts: TensorInfo[];
  /** Upload as f32 whatever the file dtype (norm weights). */
  f32?: boolean;
}

export type LoadProgress = (loadedBytes: number, totalBytes: number, tensor: string) => void;

export interface LoadOptions {
  onProgress?: LoadProgress;
  /** KV cache blocks to allocate (default: enough for one full context). */
  kvBlocks?: number;
  /** Tokens per KV block (default 16). */
  blockSize?: number;
  /**
   * KV cache element type (default: f16 for 16-bit weights, f32 for f32 weights). An f16 cache
   * is stored as packed pairs, so it needs no `shader-f16`.
   */
  kvDtype?: KvDtype;
  /** Bytes the weights may take (default: no limit beyond the device's buffer limits). */
  weightBudget?: number;
}

export class GpuModel {
  readonly #owned: GPUBuffer[] = [];
  readonly layers: GpuLayer[] = [];
  embed!: GpuTensor;
  lmHead!: GpuTensor;
  /** The final RMSNorm weight, f32. */
  finalNorm!: GPUBuffer;
  readonly kCache: GPUBuffer[] = [];
  readonly vCache: GPUBuffer[] = [];
  readonly invFreq: GPUBuffer;

  private constructor(
    readonly gpu: Gpu,
    readonly config: ModelConfig,
    readonly weights: ModelWeights,
    readonly blockSize: number,
    readonly kvBlocks: number,
    readonly kvDtype: KvDtype,
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
    checkFits(
      layerUploads(weights).map((u) => ({ name: u.label, length: uploadBytes(u) })),
      gpu.caps,
    );
    const blockSize = options.blockSize ?? 16;
    const kvBlocks = options.kvBlocks ?? Math.ceil(config.maxPositionEmbeddings / blockSize);
    const kvDtype = options.kvDtype ?? (weights.embed.dtype === "f32" ? "f32" : "f16");
    const kvBytes = kvBlocks * blockSize * config.numKvHeads * config.headDim *
      kvBytesPerElement(kvDtype);
    if (kvBytes > Math.min(gpu.caps.maxStorageBufferBindingSize, gpu.caps.maxBufferSize)) {
      throw new EngineError(
        "ResourceExhausted",
        `a KV cache layer of ${kvBlocks} blocks needs ${kvBytes} bytes; one buffer may hold ${gpu.caps.maxStorageBufferBindingSize}`,
      );
    }
    const model = new GpuModel(gpu, config, weights, blockSize, kvBlocks, kvDtype);
    try {
      await model.#uploadAll(list, options.onProgress);
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

  async #uploadAll(list: TensorInfo[], onProgress?: LoadProgress): Promise<void> {
    const total = list.reduce((n, t) => n + t.length, 0);
    let loaded = 0;
    const seen = new Map<TensorInfo, GpuTensor>();
    const upload = async (u: Upload): Promise<GpuTensor> => {
      const single = u.parts.length === 1 && !u.f32 ? seen.get(u.parts[0]!) : undefined;
      if (single) return single; // a tied LM head is the embedding
      const t = await this.#upload(u, (bytes, name) => {
        loaded += bytes;
        onProgress?.(loaded, total, name);
      });
      if (u.parts.length === 1 && !u.f32) seen.set(u.parts[0]!, t);
      return t;
    };
    const w = this.weights;
    this.embed = await upload({ label: w.embed.name, parts: [w.embed] });
    for (const l of w.layers) {
      const layer: GpuLayer = {
        inputNorm: (await upload(norm(l.inputNorm))).buffer,
        qkv: await upload(stacked(l.q, [l.q, l.k, l.v])),
        o: await upload({ label: l.o.name, parts: [l.o] }),
        postNorm: (await upload(norm(l.postNorm))).buffer,
        gateUp: await upload(stacked(l.gate, [l.gate, l.up])),
        down: await upload({ label: l.down.name, parts: [l.down] }),
      };
      if (l.qBias && l.kBias && l.vBias) {
        layer.qkvBias = await upload(stacked(l.qBias, [l.qBias, l.kBias, l.vBias]));
      }
      this.layers.push(layer);
    }
    this.finalNorm = (await upload(norm(w.norm))).buffer;
    this.lmHead = await upload({ label: w.lmHead.name, parts: [w.lmHead] });
  }

  /** Read `u`'s tensors and write them into one new buffer, reporting bytes read per tensor. */
  async #upload(u: Upload, progress: (bytes: number, name: string) => void): Promise<GpuTensor> {
    const dtypes = new Set(u.parts.map((t) => t.dtype));
    const dtype: WeightDtype = u.f32 || dtypes.size > 1 ? "f32" : u.parts[0]!.dtype;
    const buffer = this.own(
      this.gpu.device.createBuffer({
        label: u.label,
        size: Math.max(4, Math.ceil(uploadBytes(u) / 4) * 4),
        usage: STORAGE,
        mappedAtCreation: true,
      }),
    );
    const mapped = new Uint8Array(buffer.getMappedRange());
    let offset = 0;
    try {
      for (const t of u.parts) {
        const raw = await t.source.read(t.offset, t.length);
        if (raw.length !== t.length) {
          throw EngineError.invalidArgument(
            `tensor ${t.name}: read ${raw.length} of ${t.length} bytes (truncated file?)`,
          );
        }
        const bytes = t.dtype === dtype ? raw : encodeWeights(decodeWeights(raw, t.dtype), dtype);
        mapped.set(bytes, offset);
        offset += bytes.length;
        progress(t.length, t.name);
      }
    } finally {
      buffer.unmap();
    }
    return { buffer, dtype };
  }

  own(buffer: GPUBuffer): GPUBuffer {
    this.#owned.push(buffer);
    return buffer;
  }

  /** Free every buffer this model owns. Safe to call twice. */
  destroy(): void {
    for (const b of this.#owned.splice(0)) b.destroy();
  }
}

const norm = (t: TensorInfo): Upload => ({ label: t.name, parts: [t], f32: true });

/** Tensors stacked row-wise into one buffer, labelled after the first with `+` for the rest. */
function stacked(first: TensorInfo, parts: TensorInfo[]): Upload {
  return { label: `${first.name}+${parts.length - 1}`, parts };
}

/** The bytes an upload takes on the GPU. */
function uploadBytes(u: Upload): number {
  const widen = u.f32 || new Set(u.parts.map((t) => t.dtype)).size > 1;
  return u.parts.reduce((n, t) => n + (widen ? t.length / DTYPE_BYTES[t.dtype] * 4 : t.length), 0);
}

/** The stacked uploads of every layer, for the size check before any allocation. */
function layerUploads(w: ModelWeights): Upload[] {
  return w.layers.flatMap((l) => [stacked(l.q, [l.q, l.k, l.v]), stacked(l.gate, [l.gate, l.up])]);
}
