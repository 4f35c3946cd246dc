/**
 * One request's state inside `OrtEngine` and its decode step: the feeds for the tokens not yet
 * in its KV (the whole prompt at first, then the last sampled token), `session.run`, the new
 * `present.*` kept as the next step's past (GPU tensors on WebGPU), and the sampled token.
 */
import type * as Ort from "onnxruntime-web";
import type { SampledToken } from "../../gpu/kernels/sampling.ts";
import type { Sequence } from "../sequence.ts";
import { cpuRow, cpuSample, type GpuRowSampler } from "./sampling.ts";
import type { Layout, OrtModule } from "./session.ts";

/** A request the engine steps: its sequence, and the KV its past steps left. */
export class OrtRequest {
  /** `past_key_values.*` for the next step (the previous step's `present.*`). */
  past: Record<string, Ort.Tensor> | undefined;
  /** Tokens whose K/V are in `past`. */
  pastLength = 0;

  constructor(readonly seq: Sequence) {}

  /** Release the KV tensors (idempotent). */
  dispose(): void {
    disposeAll(this.past);
    this.past = undefined;
  }
}

export interface StepContext {
  ort: OrtModule;
  session: Ort.InferenceSession;
  layout: Layout;
  /** The GPU sampler on ORT's device (WebGPU EP), or none: sample on the CPU. */
  gpu: GpuRowSampler | undefined;
}

function int64(ort: OrtModule, values: number[]): Ort.Tensor {
  return new ort.Tensor("int64", BigInt64Array.from(values, BigInt), [1, values.length]);
}

/** Empty past tensors for a request's first step. */
function emptyPast(c: StepContext): Record<string, Ort.Tensor> {
  const { ort, layout: l } = c;
  const dims = [1, l.kvHeads, 0, l.headDim];
  const empty = l.kvType === "float16"
    ? new ort.Tensor("float16", new Uint16Array(0), dims)
    : new ort.Tensor("float32", new Float32Array(0), dims);
  const past: Record<string, Ort.Tensor> = {};
  for (let i = 0; i < l.layers; i++) {
    past[`past_key_values.${i}.key`] = empty;
    past[`past_key_values.${i}.value`] = empty;
  }
  return past;
}

/**
 * Run the request's next step and sample its next token. The request's past is replaced by the
 * step's present (the old one disposed) before sampling, so a failure while sampling leaves no
 * tensor unowned.
 */
export async function step(c: StepContext, r: OrtRequest): Promise<SampledToken> {
  const { ort, layout } = c;
  const seq = r.seq;
  const fresh = seq.tokens.slice(r.pastLength);
  const total = r.pastLength + fresh.length;
  const feeds: Record<string, Ort.Tensor> = {
    input_ids: int64(ort, fresh),
    attention_mask: int64(ort, new Array<number>(total).fill(1)),
    position_ids: int64(ort, fresh.map((_, i) => r.pastLength + i)),
    ...(r.past ?? emptyPast(c)),
  };
  const out = await c.session.run(feeds);
  const logits = out.logits!;
  try {
    const present: Record<string, Ort.Tensor> = {};
    for (let i = 0; i < layout.layers; i++) {
      present[`past_key_values.${i}.key`] = out[`present.${i}.key`]!;
      present[`past_key_values.${i}.value`] = out[`present.${i}.value`]!;
    }
    disposeAll(r.past);
    r.past = present;
    r.pastLength = total;
    const params = seq.sampling(0);
    const row = fresh.length - 1;
    return c.gpu !== undefined && logits.location === "gpu-buffer"
      ? await c.gpu.sample(logits, row, params)
      : cpuSample(cpuRow(logits, row, layout.vocab), params);
  } finally {
    logits.dispose();
  }
}

function disposeAll(tensors: Record<string, Ort.Tensor> | undefined): void {
  if (tensors === undefined) return;
  for (const t of new Set(Object.values(tensors))) {
    if (t.location === "gpu-buffer") t.dispose();
  }
}
