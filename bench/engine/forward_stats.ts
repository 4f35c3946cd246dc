/**
 * Numbers about one decode step that need the forward pass itself, not the engine: the GPU
 * dispatches it records (`Forward.dispatchesPerStep`), the CPU time `Forward.encode` takes to
 * record it (nothing is submitted, so the GPU is never waited on), and the weight bytes it reads.
 * The forward is built as the engine builds it (over a GPU token store), so the counts match.
 */
import type { ModelFiles } from "../../src/formats/source.ts";
import type { Gpu } from "../../src/gpu/device.ts";
import { storageBuffer } from "../../src/gpu/buffers.ts";
import { openCheckpoint } from "../../src/model/checkpoint.ts";
import { Forward, type StepBatch } from "../../src/runtime/forward.ts";
import { GpuModel } from "../../src/runtime/gpu_model.ts";
import { rowBytes } from "../../src/runtime/upload.ts";
import { weightList } from "../../src/model/weights.ts";

export interface WeightBytes {
  /** Every tensor in the checkpoint the model uses. */
  total: number;
  /** What one decode step of one token reads: all but the embedding, plus one embedding row. */
  per_decode_step: number;
}

/** Weight bytes of a checkpoint (safetensors or GGUF), from its headers alone. */
export async function weightBytes(files: ModelFiles): Promise<WeightBytes> {
  const w = (await openCheckpoint(files)).weights;
  const total = weightList(w).reduce((n, t) => n + t.length, 0);
  const row = rowBytes(w.embed, w.embed.dtype);
  // Tied: the LM head reads the whole embedding anyway (it is in `total` once).
  const perStep = total - w.embed.length + row + (w.lmHead === w.embed ? w.embed.length : 0);
  return { total, per_decode_step: perStep };
}

export interface EncodeTiming {
  batch: number;
  dispatches: number;
  encode_ms_median: number;
  encode_ms_p10: number;
  encode_ms_p90: number;
  iterations: number;
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/** Decode-step dispatch counts and encode times for each batch size in `batches`. */
export async function forwardStats(
  gpu: Gpu,
  files: ModelFiles,
  batches: readonly number[],
  iterations: number,
): Promise<EncodeTiming[]> {
  const maxBatch = Math.max(...batches);
  const model = await GpuModel.load(gpu, files, { kvBlocks: maxBatch });
  const store = storageBuffer(gpu.device, "bench:token_store", Math.max(16, maxBatch) * 4);
  const fwd = new Forward(model, { tokensFrom: store });
  const out: EncodeTiming[] = [];
  try {
    for (const b of batches) {
      // b sequences, each one token at position 15 of its own block.
      const bs = model.blockSize;
      const batch: StepBatch = {
        tokens: Array.from({ length: b }, (_, i) => i),
        positions: Array.from({ length: b }, () => bs - 1),
        slots: Array.from({ length: b }, (_, i) => i * bs + bs - 1),
        tableOffsets: Array.from({ length: b }, (_, i) => i),
        blockTable: Array.from({ length: b }, (_, i) => i),
        logitRows: Array.from({ length: b }, (_, i) => i),
      };
      const dispatches = await fwd.dispatchesPerStep(b, b);
      const times: number[] = [];
      for (let i = 0; i < iterations + 3; i++) {
        const enc = gpu.device.createCommandEncoder({ label: "bench:encode" });
        const t0 = performance.now();
        await fwd.encode(enc, batch);
        const t = performance.now() - t0;
        if (i >= 3) times.push(t); // the first builds the plan
        enc.finish(); // recorded, never submitted
      }
      gpu.device.queue.submit([]); // flush the input writes the encodes queued
      await gpu.device.queue.onSubmittedWorkDone();
      times.sort((x, y) => x - y);
      out.push({
        batch: b,
        dispatches,
        encode_ms_median: quantile(times, 0.5),
        encode_ms_p10: quantile(times, 0.1),
        encode_ms_p90: quantile(times, 0.9),
        iterations,
      });
    }
  } finally {
    fwd.destroy();
    store.destroy();
    model.destroy();
  }
  return out;
}
