/**
 * Sampling ORT's logits. On the WebGPU EP the last position's row of ORT's `logits` GPU tensor
 * is copied (f16 widened) into Kiln's own f32 buffer on ORT's device and sampled there by the
 * WGSL `Sampler`; only the token, its logprob and the top alternatives come back. On the wasm
 * EP the logits are on the CPU already and are sampled with the float64 reference sampler's
 * semantics and the GPU's counter-based RNG (same seed and step: same uniform draw).
 */
import type * as Ort from "onnxruntime-web";
import { f16ToNumber } from "../../gpu/dtype.ts";
import { storageBuffer } from "../../gpu/buffers.ts";
import { RowCopier } from "../../gpu/kernels/logits.ts";
import {
  MAX_TOP_LOGPROBS,
  NO_TOKEN,
  type SampledToken,
  Sampler,
  type SeqSampling,
} from "../../gpu/kernels/sampling.ts";
import {
  bannedByBadWords,
  processedLogits,
  referenceDraw,
  referenceStep,
  referenceTop,
  rngUniform,
} from "../../reference/kernels/sampling.ts";
import { allows } from "../../gpu/token_mask_bits.ts";
import { Readback } from "../readback.ts";

/** Samples one row at a time of ORT's GPU logits on ORT's device. */
export class GpuRowSampler {
  readonly #copier: RowCopier;
  readonly #logits: GPUBuffer;
  readonly #sampler: Sampler;
  readonly #readback: Readback;

  constructor(readonly device: GPUDevice, readonly vocab: number) {
    this.#copier = new RowCopier(device, "ort:logits_row");
    this.#logits = storageBuffer(device, "ort:logits", vocab * 4);
    this.#sampler = new Sampler(device, 1, vocab);
    this.#readback = new Readback(device, this.#sampler);
  }

  /**
   * Compile the row copy's and the sampler's pipelines now (the engine's `start()`), not in the
   * first request.
   */
  async warm(): Promise<void> {
    await Promise.all([this.#copier.warm(), this.#sampler.warm(this.#logits)]);
  }

  /**
   * Sample row `row` of `logits` (an ORT GPU tensor `[1, rows, vocab]`, f32 or f16). ORT has
   * submitted its work to the device's queue when `run()` resolves, so work submitted here
   * after it reads the finished logits (queue order).
   */
  async sample(logits: Ort.Tensor, row: number, p: SeqSampling): Promise<SampledToken> {
    const d = this.device;
    const encoder = d.createCommandEncoder({ label: "ort:sample" });
    await this.#copier.encode(encoder, {
      src: logits.gpuBuffer as GPUBuffer,
      srcDtype: logits.type === "float16" ? "f16" : "f32",
      srcOffset: row * this.vocab,
      dst: this.#logits,
      dstOffset: 0,
      count: this.vocab,
    });
    this.#sampler.write([p]);
    await this.#sampler.encode(encoder, this.#logits, 1);
    const read = this.#readback.encode(encoder, 1, (p.logprobs ?? 0) > 0);
    d.queue.submit([encoder.finish()]);
    return (await read())[0]!;
  }

  destroy(): void {
    this.#readback.destroy();
    this.#sampler.destroy();
    this.#copier.destroy();
    this.#logits.destroy();
  }
}

/** Row `row` of CPU logits (`float32`, or `float16` as bit patterns or a Float16Array). */
export function cpuRow(logits: Ort.Tensor, row: number, vocab: number): Float64Array {
  const data = logits.data as ArrayLike<number>;
  const start = row * vocab;
  const out = new Float64Array(vocab);
  const bits = logits.type === "float16" && data instanceof Uint16Array;
  for (let i = 0; i < vocab; i++) {
    const v = data[start + i]!;
    out[i] = bits ? f16ToNumber(v) : v;
  }
  return out;
}

/**
 * The sampler's semantics in float64 on the CPU: the reference distribution (masks, penalties,
 * temperature, top-k, top-p, min-p), the draw with `rngUniform(seed, step)` (argmax when
 * greedy), and the logprobs of the distribution drawn from (`referenceLogprobs`: the GPU
 * sampler's rule) for the chosen token and the top alternatives, which list no token that
 * cannot be drawn.
 */
export function cpuSample(raw: Float64Array, p: SeqSampling): SampledToken {
  // The reference computes on f32 values as the GPU reads them.
  const logits = Float64Array.from(Float32Array.from(raw));
  // Guided decoding's bitmask: a forbidden token is out of the draw and the logprobs alike.
  if (p.tokenMask) logits.forEach((_, i) => !allows(p.tokenMask!, i) && (logits[i] = -Infinity));
  const banned = [...(p.banned ?? []), ...bannedByBadWords(p.badWords ?? [], p.history.tokens)];
  const params = { ...p, banned };
  // Masks that leave no token: as the GPU sampler, no token (the request fails).
  if (!processedLogits(logits, params, p.history).some((l) => l > -Infinity)) {
    return { token: NO_TOKEN, logprob: NaN };
  }
  const { probs, logprobs: lp } = referenceStep(logits, params, p.history);
  const seed = p.seed ?? 0;
  const u = p.u ?? rngUniform(seed >>> 0, Math.floor(seed / 2 ** 32) >>> 0, p.step ?? 0);
  const token = referenceDraw(probs, u);
  const out: SampledToken = { token, logprob: lp[token]! };
  const n = Math.min(p.logprobs ?? 0, MAX_TOP_LOGPROBS);
  if (n > 0) {
    const top = referenceTop(lp, n);
    out.top = { ids: Uint32Array.from(top.ids), logprobs: Float32Array.from(top.logprobs) };
  }
  return out;
}
