/**
 * A `WebGpuEngine`'s draft model (`speculative: { method: "draft_model" }`): a second engine on
 * the same device, started before the target's weights are read, with the target's batch limits
 * and kernel paths and its own KV cache. Its memory is its own: the target's `gpuMemoryBytes`
 * does not count it.
 *
 * @module
 */
import type { LLMEngine } from "../../contract/engine.ts";
import { EngineError } from "../../contract/errors.ts";
import type { EngineConfig } from "../../contract/types.ts";
import type { Gpu } from "../../gpu/device.ts";
import { modelName } from "../../formats/source.ts";
import type { DraftEngine } from "../draft_model.ts";
import type { DraftModelSettings } from "../speculation.ts";
import type { WebGpuEngineOptions } from "./options.ts";

/** An engine that can draft: started, it knows its vocabulary. */
export interface DraftCapable extends LLMEngine {
  readonly vocabSize: number;
}

/** A started draft engine. */
export interface StartedDraft extends DraftEngine {
  /** What the draft engine's `start()` returned. */
  config: EngineConfig;
}

/**
 * Start the draft engine `make` builds from `o` and `spec` on `gpu`. A draft model that fails to
 * start fails the target's start, with its error's type and the message saying it was the draft.
 */
export async function startDraft(
  o: WebGpuEngineOptions,
  spec: DraftModelSettings,
  gpu: Gpu,
  make: (o: WebGpuEngineOptions) => DraftCapable,
): Promise<StartedDraft> {
  const engine = make({
    files: spec.model,
    name: modelName(spec.model.location),
    gpu,
    ...(spec.kvBlocks === undefined ? {} : { kvBlocks: spec.kvBlocks }),
    ...(o.blockSize === undefined ? {} : { blockSize: o.blockSize }),
    ...(o.maxNumSeqs === undefined ? {} : { maxNumSeqs: o.maxNumSeqs }),
    ...(o.maxNumBatchedTokens === undefined ? {} : { maxNumBatchedTokens: o.maxNumBatchedTokens }),
    ...(o.kernelPaths === undefined ? {} : { kernelPaths: o.kernelPaths }),
    ...(o.upload === undefined ? {} : { upload: o.upload }),
    ...(o.warmUp === undefined ? {} : { warmUp: o.warmUp }),
  });
  try {
    const config = await engine.start(0n);
    return {
      engine,
      config,
      vocabSize: engine.vocabSize,
      context: config.context_length ?? Infinity,
    };
  } catch (e) {
    await engine.cleanup();
    const err = EngineError.from(e);
    throw new EngineError(err.type, `speculative draft model: ${err.message}`, { cause: e });
  }
}

/** `InvalidArgument` unless the draft's vocabulary fits in the target's (`vocab` tokens). */
export function checkDraftVocab(draft: StartedDraft, vocab: number): void {
  if (draft.vocabSize > vocab) {
    throw EngineError.invalidArgument(
      `speculative draft model ${draft.config.model}: its vocabulary (${draft.vocabSize} tokens) ` +
        `is larger than the target's (${vocab}); a draft model shares the target's tokenizer`,
    );
  }
}
