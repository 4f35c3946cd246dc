/**
 * `OrtEngine`'s core: the round-robin loop over its live requests, and one request's state and
 * decode step: the feeds for the tokens not yet in its KV (the whole prompt at first, then the
 * last sampled token), `session.run`, the new `present.*` kept as the next step's past (GPU
 * tensors on WebGPU), and the sampled token.
 */
import type * as Ort from "onnxruntime-web";
import { EngineError } from "../../contract/errors.ts";
import type { SampledToken } from "../../gpu/kernels/sampling.ts";
import type { Lifecycle } from "../lifecycle.ts";
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

/**
 * The loop: one step (the whole prompt at first, then one token) of each live request in turn,
 * at most `max` live at once; more wait in arrival order.
 */
export class RoundRobin {
  #loop: Promise<void> | undefined;
  #waiting: OrtRequest[] = [];
  #active: OrtRequest[] = [];
  /** The request whose step is running (out of `#active` meanwhile). */
  #stepping: OrtRequest | undefined;

  /**
   * A loop over `ctx` that steps while `life` is active (and lets every request go once it is
   * stopped), calling `report` each turn; `steps.runs` counts its `session.run` calls.
   */
  constructor(
    readonly ctx: StepContext,
    readonly max: number,
    readonly steps: { runs: number },
    readonly life: Lifecycle,
    readonly report: () => void,
  ) {}

  /** The loop now running (undefined when idle). */
  get loop(): Promise<void> | undefined {
    return this.#loop;
  }

  /** Requests in the rotation, not counting the one stepping now. */
  get rotating(): number {
    return this.#active.length;
  }

  /** Request slots holding KV now. */
  get usedSlots(): number {
    return this.#active.length + (this.#stepping === undefined ? 0 : 1);
  }

  /**
   * Queue `seq` and start the loop if it is idle. A cancelled request's stream ends at once, not
   * when the step in flight returns; the loop releases its KV after that step.
   */
  admit(seq: Sequence): void {
    this.#waiting.push(new OrtRequest(seq));
    seq.signal.addEventListener("abort", () => seq.cancel(), { once: true });
    this.#loop ??= this.#run();
  }

  async #run(): Promise<void> {
    // Not synchronously: `this.#loop ??= this.#run()` must be assigned before this can end.
    await Promise.resolve();
    try {
      while (this.life.active) {
        this.prune();
        while (this.#active.length < this.max && this.#waiting.length > 0) {
          this.#active.push(this.#waiting.shift()!);
        }
        this.report();
        const r = this.#stepping = this.#active.shift();
        if (r === undefined) return;
        await this.#step(r);
        this.#stepping = undefined;
        if (r.seq.finished) r.dispose();
        else this.#active.push(r); // to the back: round-robin
      }
    } finally {
      this.#loop = undefined;
      this.#stepping = undefined;
      if (this.life.state === "stopped") this.prune();
      this.report();
      // A request that arrived while the loop was ending starts a new one.
      if (this.life.active && this.#waiting.length > 0) this.#loop ??= this.#run();
    }
  }

  /** One step of `r`: its token accepted, its next mask made; a failure fails `r` only. */
  async #step(r: OrtRequest): Promise<void> {
    try {
      this.steps.runs++;
      const t = await step(this.ctx, r);
      if (r.seq.signal.aborted) r.seq.cancel();
      else r.seq.accept(t.token, t.logprob, t.top);
      await r.seq.prepareMask(); // a guided request's next mask
    } catch (e) {
      r.seq.fail(EngineError.from(e));
    }
  }

  /** Drop requests that ended (cancelled, failed) and release their KV. */
  prune(): void {
    const keep = (r: OrtRequest) => {
      if (r.seq.signal.aborted) r.seq.cancel();
      if (!r.seq.finished && this.life.state !== "stopped") return true;
      r.seq.cancel();
      r.dispose();
      return false;
    };
    this.#active = this.#active.filter(keep);
    this.#waiting = this.#waiting.filter(keep);
  }
}
