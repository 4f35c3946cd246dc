/**
 * A plain single-sequence generation loop on one `GpuModel`: prefill, then one decode step per
 * token with the GPU sampler, reading each token back before the next step. It is the simple
 * path (`npm start`, tests); the engine batches many sequences and keeps tokens on the GPU.
 */
import { EngineError } from "../contract/errors.ts";
import { Sampler, type SeqSampling } from "../gpu/kernels/sampling.ts";
import { Forward } from "./forward.ts";
import type { GpuModel } from "./gpu_model.ts";

/** Sampling settings and limits of {@linkcode generateTokens}. */
export interface GenerateOptions extends Omit<SeqSampling, "history" | "step" | "u"> {
  /** Most tokens to generate; prompt plus `maxTokens` must fit the context and the KV cache. */
  maxTokens: number;
  /** Stop after any of these tokens (it is yielded first). */
  stopTokens?: readonly number[];
  /** Stops generation before the next step once aborted. */
  signal?: AbortSignal;
}

/** Yield generated token ids one by one. */
export async function* generateTokens(
  model: GpuModel,
  prompt: readonly number[],
  options: GenerateOptions,
): AsyncGenerator<{ token: number; logprob: number }> {
  const total = prompt.length + options.maxTokens;
  if (prompt.length === 0) throw EngineError.invalidArgument("prompt: empty");
  if (total > Math.min(model.config.maxPositionEmbeddings, model.kvBlocks * model.blockSize)) {
    throw EngineError.invalidArgument(`prompt + max tokens (${total}) exceed the context`);
  }
  const device = model.gpu.device;
  const fwd = new Forward(model);
  const sampler = new Sampler(device, 1, model.config.vocabSize);
  const blockTable = Array.from({ length: Math.ceil(total / model.blockSize) }, (_, i) => i);
  const tokens = [...prompt];
  try {
    let step = [...prompt];
    for (let n = 0; n < options.maxTokens && !options.signal?.aborted; n++) {
      const start = tokens.length - step.length;
      const positions = step.map((_, i) => start + i);
      const encoder = device.createCommandEncoder({ label: "generate" });
      const { logits } = await fwd.encode(encoder, {
        tokens: step,
        positions,
        slots: positions,
        tableOffsets: step.map(() => 0),
        blockTable,
        logitRows: [step.length - 1],
      });
      sampler.write([{ ...options, history: { tokens, outputStart: prompt.length }, step: n }]);
      await sampler.encode(encoder, logits, 1);
      device.queue.submit([encoder.finish()]);
      const [result] = await sampler.read(1);
      const token = result!.token;
      tokens.push(token);
      yield { token, logprob: result!.logprob };
      if (options.stopTokens?.includes(token)) return;
      step = [token];
    }
  } finally {
    sampler.destroy();
    fwd.destroy();
  }
}
