/** The settings of a `WebGpuEngine` (`engine.ts`). */
import { EngineError } from "../../contract/errors.ts";
import { acquireGpu, type Gpu } from "../../gpu/device.ts";
import type { PathKind } from "../../gpu/paths.ts";
import type { TokenMaskPath } from "../../gpu/kernels/token_mask.ts";
import type { GuidedForcing } from "../token_mask.ts";
import type { GuidedLimits } from "../guided/limits.ts";
import type { LoadProgress } from "../../runtime/gpu_model.ts";
import type { ModelFiles } from "../../formats/source.ts";
import type { UploadOptions } from "../../runtime/staging.ts";
import type { SpeculativeOptions } from "../speculation.ts";

/** Settings of a {@linkcode WebGpuEngine}. */
export interface WebGpuEngineOptions {
  /** Where the checkpoint (config, tokenizer, weights) is read from. */
  files: ModelFiles;
  /** The model name reported in `EngineConfig.model`. */
  name: string;
  /** Reported as `EngineConfig.served_model_name`. */
  servedModelName?: string;
  /** Tokens per KV cache block (default 16). */
  blockSize?: number;
  /**
   * KV cache blocks (default: four full contexts, fewer when one layer's buffer would pass the
   * device's buffer limits or the memory budget has less room; see `kv_size.ts`).
   * `EngineConfig.runtime_data` says how it was chosen.
   */
  kvBlocks?: number;
  /**
   * GPU memory the engine may use, in bytes (default: half of `navigator.deviceMemory` where
   * the page has it, else 4 GiB; see `fit.ts`). Checked from the checkpoint's headers before
   * any weight is read (`ResourceExhausted` when weights, scratch and the least KV cache do not
   * fit), and the default KV cache takes no more than what is left.
   */
  gpuMemoryBytes?: number;
  /**
   * How weights reach the GPU (default `{ via: "write" }`: `queue.writeBuffer` of bounded,
   * reused chunks; `"staging"`: a ring of mapped staging buffers). See `model/staging.ts`.
   */
  upload?: UploadOptions;
  /** Most sequences per forward step (default 16). */
  maxNumSeqs?: number;
  /** Most tokens per forward step (default 256, at least `maxNumSeqs`). */
  maxNumBatchedTokens?: number;
  /** An already acquired device (tests share one); otherwise the engine acquires and owns one. */
  gpu?: Gpu;
  /**
   * The kernel paths of the device the engine acquires (see `gpu/paths.ts`; default: `cpu` on
   * a fallback adapter, else `gpu`). `gpu` runs a GPU's kernels on a CPU adapter, as tests do.
   * With `gpu` given, it must name that device's paths.
   */
  kernelPaths?: PathKind;
  /** How long drain() waits for in-flight requests (default 30 s). */
  drainTimeoutMs?: number;
  /**
   * Decode steps kept in flight while their tokens are read back (1: wait for every token).
   * Default: adapted to the measured step time, enough to hide about 25 ms of read-back
   * latency, between 2 and 16.
   */
  pipelineDepth?: number;
  /**
   * Called during `start()`: as weights reach the GPU (phase `weights`: bytes so far, total,
   * tensor name), then as the compute pipelines compile (phase `pipelines`: pipelines so far,
   * total, pipeline name).
   */
  onLoadProgress?: LoadProgress;
  /**
   * Compile every compute pipeline a request can take during `start()` (default true), so that
   * the first request is as fast as the next; false leaves each to the first step that needs it.
   */
  warmUp?: boolean;
  /**
   * Where guided requests' token bitmasks are applied: `pass` (default), a kernel before the
   * sampler, or `fused`, inside the sampling kernel (`gpu/kernels/token_mask.ts`).
   */
  tokenMaskPath?: TokenMaskPath;
  /**
   * Forced stretches in guided decoding: where a guided request's grammar allows exactly one
   * token, then exactly one again, ..., `chunk` (default) appends those tokens (up to 32 in a
   * row) without sampling them and computes them in one step, as a prompt chunk; `off` samples
   * every token. The output is the same either way (see `docs/guided_decoding.md`).
   */
  guidedForcing?: GuidedForcing;
  /**
   * Guided decoding's budgets: the time one grammar-library call may take (default 20 s), the
   * size of a constraint's text and choices (see `guided/limits.ts`).
   */
  guidedLimits?: GuidedLimits;
  /**
   * Speculative decoding (off by default): `{ method: "ngram" }` drafts each sequence's next
   * tokens from its own prompt and output (prompt lookup), `{ method: "draft_model", model }`
   * with a smaller model of the same tokenizer (a second engine on this device, its memory not
   * counted in `gpuMemoryBytes`); either way they are verified in one step, and the output is
   * the same, token for token, as without it (see `../speculation.ts`). The sampler then holds a
   * row per drafted token too (`maxNumSeqs × (1 + k)` rows).
   */
  speculative?: SpeculativeOptions;
}

/**
 * The device an engine runs on: the one given (checked against `kernelPaths`), else a new one
 * labelled with the model's name.
 */
export async function engineGpu(o: WebGpuEngineOptions): Promise<Gpu> {
  if (o.gpu && o.kernelPaths !== undefined && o.gpu.caps.paths !== o.kernelPaths) {
    throw EngineError.invalidArgument(
      `kernelPaths ${o.kernelPaths}: the device given takes ${o.gpu.caps.paths} paths`,
    );
  }
  return o.gpu ?? await acquireGpu({
    label: `kiln:${o.name}`,
    ...(o.kernelPaths === undefined ? {} : { paths: o.kernelPaths }),
  });
}
