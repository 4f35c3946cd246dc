/** Kiln's greedy continuation on a loaded model, with its own top-1/top-2 margin at each step. */
import { Forward } from "../../src/runtime/forward.ts";
import type { GpuModel } from "../../src/runtime/gpu_model.ts";

export interface Greedy {
  tokens: number[];
  /** Top-1 minus top-2 logit at each step. */
  margins: number[];
}

/** `n` greedy tokens after `prompt` (the model's KV cache must hold `prompt.length + n`). */
export async function kilnGreedy(
  model: GpuModel,
  prompt: number[],
  n: number,
): Promise<Greedy> {
  const vocab = model.config.vocabSize;
  const blockTable = Array.from({ length: model.kvBlocks }, (_, i) => i);
  const fwd = new Forward(model);
  const tokens: number[] = [], margins: number[] = [];
  try {
    let step = prompt, start = 0;
    for (let k = 0; k < n; k++) {
      const positions = step.map((_, i) => start + i);
      const logits = await fwd.run({
        tokens: step,
        positions,
        slots: positions,
        tableOffsets: step.map(() => 0),
        blockTable,
        logitRows: [step.length - 1],
      });
      let best = 0, second = -Infinity;
      for (let v = 1; v < vocab; v++) {
        if (logits[v]! > logits[best]!) [second, best] = [logits[best]!, v];
        else if (logits[v]! > second) second = logits[v]!;
      }
      tokens.push(best);
      margins.push(logits[best]! - second);
      start += step.length;
      step = [best];
    }
  } finally {
    fwd.destroy();
  }
  return { tokens, margins };
}
