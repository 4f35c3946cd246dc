/** What `GpuModel.load` takes: its options and the progress it reports. */
import type { KvDtype } from "../gpu/kernels/attention.ts";
import type { LoadPhase, LoadProgress } from "../model/checkpoint.ts";
import type { UploadOptions } from "./staging.ts";

export type { LoadPhase, LoadProgress };

/**
 * How `GpuModel.load` sizes the KV cache and reports progress, `Model` the model `beside` gets
 * (`gpu_model.ts` names it `LoadOptions`; generic here so that this file need not import it).
 */
export interface LoadOptionsOf<Model> {
  /** Called as weights reach the GPU. */
  onProgress?: LoadProgress;
  /** KV cache blocks to allocate (default: enough for one full context). */
  kvBlocks?: number;
  /**
   * Sequences that may hold a recurrent state at once, in a model with recurrent layers (default
   * 1): an engine passes its `max_num_seqs`, and each step's sequences name their slot.
   */
  stateSlots?: number;
  /** Tokens per KV block (default 16). */
  blockSize?: number;
  /**
   * KV cache element type (default: f16 for 16-bit weights, f32 for f32 weights). An f16 cache
   * is stored as packed pairs, so it needs no `shader-f16`.
   */
  kvDtype?: KvDtype;
  /** Bytes the weights may take (default: no limit beyond the device's buffer limits). */
  weightBudget?: number;
  /**
   * Most bytes one buffer of experts may take (default, and at most: the device's binding
   * limit). A layer's experts are split into buffers of whole experts to fit; lower it to split
   * them further (tests do, to run the split path on small models).
   */
  maxSlabBytes?: number;
  /** How weights reach the GPU (default: `queue.writeBuffer` of bounded, reused chunks). */
  upload?: UploadOptions;
  /**
   * Run while the weights upload, once every buffer of the model exists (empty, filling in file
   * order; anything submitted reads them as they are then): an engine compiles its pipelines
   * here, so that compiling and uploading overlap. The load settles when both have; a failure of
   * either fails it.
   */
  beside?: (model: Model) => Promise<void>;
}
