/**
 * The transformer forward pass as replayable GPU plans. A plan (`step_plan.ts`) is built once per
 * (tokens in the step, logit rows) and reused every step; per-step data (token ids, positions,
 * KV slots, block tables) is written into storage buffers before each submit.
 */
import { EngineError } from "../contract/errors.ts";
import { readF32, storageBuffer } from "../gpu/buffers.ts";
import { type Dispatch, encodeDispatches } from "../gpu/dispatch.ts";
import type { GpuModel } from "./gpu_model.ts";
import {
  type AttentionSplit,
  attentionSplit,
  buildPlan,
  type Plan,
  ROWS_PARTIAL_BYTES,
  type Scratch,
} from "./step_plan.ts";
import { kernelPaths } from "../gpu/paths.ts";
import { hasGatedQuery, isRecurrent } from "../model/layer_kinds.ts";
import { deltaWidths, ssmWidths } from "../model/ssm_config.ts";

/** One step: tokens of one or more sequences, where their K/V go, and which logits to return. */
export interface StepBatch {
  /** Token ids; with a forward over a token store, each token's index in the store instead. */
  tokens: ArrayLike<number>;
  /** Position of each token in its sequence (0-based), for RoPE and the causal mask. */
  positions: ArrayLike<number>;
  /** KV cache slot per token (`block * blockSize + offset`). */
  slots: ArrayLike<number>;
  /** Offset of each token's sequence block table in `blockTable`. */
  tableOffsets: ArrayLike<number>;
  /** The block tables of the step's sequences, concatenated (KV block ids in order). */
  blockTable: ArrayLike<number>;
  /** Rows (token indices) whose logits to compute, in output order. */
  logitRows: readonly number[];
  /**
   * Each token's recurrent-state slot (below `GpuModel.stateSlots`), in a model with recurrent
   * layers: its sequence's, the same for all its tokens, which are contiguous in the step with
   * consecutive positions. A sequence whose first token here is at position 0 starts from a
   * clean state. Absent: slot 0 for every token (one sequence).
   */
  stateSlots?: ArrayLike<number>;
}

/** Plans kept per forward (one per step shape); the least recently used is dropped beyond this. */
const MAX_PLANS = 64;

/** How a {@linkcode Forward} reads its tokens and splits decode attention. */
export interface ForwardOptions {
  /**
   * A token store on the GPU (u32 ids): a step's `tokens` are then indices into it, gathered on
   * the GPU, so a token sampled by one step can feed the next before the CPU has seen it.
   */
  tokensFrom?: GPUBuffer;
  /**
   * Key-axis splits of decode attention (steps of up to 4 tokens). By default chosen from the
   * context on the `gpu` kernel paths, and 1 on `cpu` (see `gpu/paths.ts`).
   */
  attentionSplits?: number;
}

/**
 * The forward pass of a {@linkcode GpuModel}: encodes a step's dispatches (plans cached per step
 * shape) and returns logits.
 */
export class Forward {
  #scratch: Scratch | undefined;
  #plans = new Map<string, Plan>();
  readonly #store: GPUBuffer | undefined;
  readonly #splits: number | undefined;
  /** The model has recurrent layers: steps carry state slots (`StepBatch.stateSlots`). */
  readonly #recurrent: boolean;

  /** A forward over `model`; scratch buffers are allocated on the first step. */
  constructor(readonly model: GpuModel, options: ForwardOptions = {}) {
    this.#store = options.tokensFrom;
    this.#splits = options.attentionSplits;
    this.#recurrent = isRecurrent(model.config);
  }

  #ensure(tokens: number, rows: number, tableEntries: number): Scratch {
    const s = this.#scratch;
    if (s && s.capacity >= Math.max(tokens, rows) && s.tableCapacity >= tableEntries) return s;
    this.#release();
    const c = this.model.config;
    const cap = Math.max(16, tokens, rows, (s?.capacity ?? 0) * 2);
    const table = Math.max(64, tableEntries, (s?.tableCapacity ?? 0) * 2);
    const d = this.model.gpu.device;
    const f = (label: string, n: number) => storageBuffer(d, `fwd:${label}`, n * 4);
    const Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim;
    const widest = Math.max(c.hiddenSize, c.intermediateSize, Q);
    // A convolution layer's B | C | x rows (a Mamba2 layer's z | xBC | dt) share the q/k/v
    // scratch, a short convolution's output attention's.
    const conv = !isRecurrent(c)
      ? 0
      : c.ssm
      ? ssmWidths(c.ssm).in
      : c.delta
      ? deltaWidths(c.delta).conv
      : 3 * c.hiddenSize;
    this.#scratch = {
      capacity: cap,
      tableCapacity: table,
      index: f("index", cap),
      ids: f("ids", cap),
      positions: f("positions", cap),
      slots: f("slots", cap),
      stateSlots: f("state_slots", cap),
      tableOffsets: f("table_offsets", cap),
      blockTable: f("block_table", table),
      x: f("x", cap * c.hiddenSize),
      branch: f("branch", cap * c.hiddenSize),
      qkv: f("qkv", cap * Math.max(Q + 2 * KV, conv)),
      q: f("q", cap * Q),
      attn: f("attn", cap * Math.max(Q, conv && c.hiddenSize)),
      act: f("act", cap * c.intermediateSize),
      linear: {
        normed: f("normed", cap * widest),
        product: f("product", cap * 2 * c.intermediateSize),
      },
      rows: f("rows", cap * c.hiddenSize),
      logits: f("logits", cap * c.vocabSize),
    };
    if (kernelPaths(d).attention === "rows") {
      // Split partials for a prefill chunk's rows attention, shared by the layers.
      const slots = Math.floor(ROWS_PARTIAL_BYTES / ((c.headDim + 2) * 4));
      this.#scratch.partials = {
        ml: storageBuffer(d, "fwd:attn_partial_ml", slots * 8),
        acc: storageBuffer(d, "fwd:attn_partial_acc", slots * c.headDim * 4),
        slots,
      };
    }
    this.#recurrentScratch(this.#scratch, cap);
    if (c.moe) {
      const { experts, topK, expertIntermediateSize } = c.moe;
      this.#scratch.moe = {
        logits: f("moe_logits", cap * experts),
        ids: f("moe_ids", cap * topK),
        weights: f("moe_weights", cap * topK),
        act: f("moe_act", cap * topK * expertIntermediateSize),
      };
    }
    return this.#scratch;
  }

  /** The Mamba2, gated delta net and gated query scratch, in models that have them. */
  #recurrentScratch(s: Scratch, cap: number): void {
    const c = this.model.config, d = this.model.gpu.device;
    const f = (label: string, n: number) => storageBuffer(d, `fwd:${label}`, n * 4);
    if (c.ssm) {
      const w = ssmWidths(c.ssm);
      s.ssm = {
        conv: f("ssm_conv", cap * w.conv),
        y: f("ssm_y", cap * c.ssm.inner),
        out: f("ssm_out", cap * c.ssm.inner),
      };
    }
    if (c.delta) {
      const w = deltaWidths(c.delta);
      s.delta = {
        zba: f("delta_zba", cap * (w.inner + 2 * c.delta.vHeads)),
        conv: f("delta_conv", cap * w.conv),
        beta: f("delta_beta", cap * c.delta.vHeads),
        g: f("delta_g", cap * c.delta.vHeads),
        o: f("delta_o", cap * w.inner),
        out: f("delta_out", cap * w.inner),
      };
    }
    if (hasGatedQuery(c)) {
      const Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim;
      s.gatedQuery = {
        rows: f("gated_q_rows", cap * (2 * Q + 2 * KV)),
        gate: f("q_gate", cap * Q),
      };
    }
  }

  /** How a step of `tokens` tokens whose queries see at most `keys` keys splits its attention. */
  #split(tokens: number, keys: number): AttentionSplit {
    const c = this.model.config;
    const slots = this.#scratch?.partials?.slots ?? 0;
    const device = this.model.gpu.device;
    return attentionSplit(
      device,
      tokens,
      keys,
      c.maxPositionEmbeddings,
      this.#splits,
      c.numHeads,
      slots,
    );
  }

  async #plan(s: Scratch, tokens: number, rows: number, split: AttentionSplit): Promise<Plan> {
    const key = `${tokens}:${rows}:${split.splits}`;
    const cached = this.#plans.get(key);
    if (cached) {
      // Most recently used last, so the first entry is the one to evict.
      this.#plans.delete(key);
      this.#plans.set(key, cached);
      return cached;
    }
    if (this.#plans.size >= MAX_PLANS) {
      const [oldKey, old] = this.#plans.entries().next().value!;
      this.#plans.delete(oldKey);
      for (const b of old.owned) b.destroy();
    }
    const plan = await buildPlan(this.model, s, tokens, rows, {
      ...(this.#store ? { store: this.#store } : {}),
      split,
    });
    this.#plans.set(key, plan);
    return plan;
  }

  /**
   * Size the scratch buffers for steps of up to `tokens` tokens and `rows` logit rows now (a
   * later, larger step would reallocate them and drop the plans built so far). Returns the
   * buffer the logits land in, which the sampler reads.
   */
  reserve(tokens: number, rows: number): GPUBuffer {
    return this.#ensure(tokens, rows, 1).logits;
  }

  /**
   * Build the plans of `shapes` ahead of any step (an engine does so while it starts), and with
   * them every compute pipeline those shapes take; all at once, so the pipelines compile side
   * by side. Returns the plans' dispatches.
   */
  async warm(
    shapes: readonly { tokens: number; rows: number; keys?: number }[],
  ): Promise<Dispatch[]> {
    const most = (k: "tokens" | "rows") => Math.max(1, ...shapes.map((x) => x[k]));
    this.reserve(most("tokens"), most("rows"));
    const s = this.#scratch!;
    const context = this.model.config.maxPositionEmbeddings;
    const plans = await Promise.all(
      shapes.map((x) =>
        this.#plan(s, x.tokens, x.rows, this.#split(x.tokens, Math.min(x.keys ?? context, context)))
      ),
    );
    return plans.flatMap((p) => [...p.body, ...p.head]);
  }

  /**
   * GPU dispatches one step of `tokens` tokens with `rows` logit rows records (the body and the
   * LM head): what the benchmark reports as dispatches per step.
   */
  async dispatchesPerStep(tokens: number, rows: number): Promise<number> {
    const s = this.#ensure(tokens, rows, 1);
    const context = this.model.config.maxPositionEmbeddings;
    const plan = await this.#plan(s, tokens, rows, this.#split(tokens, context));
    return plan.body.length + plan.head.length;
  }

  /** Check a batch against the model and the cache before anything reaches the GPU. */
  #validate(b: StepBatch): void {
    const n = b.tokens.length;
    const c = this.model.config;
    if (n === 0) throw EngineError.invalidArgument("forward: no tokens");
    for (const arr of [b.positions, b.slots, b.tableOffsets]) {
      if (arr.length !== n) {
        throw EngineError.invalidArgument("forward: per-token arrays differ in length");
      }
    }
    const storeLen = this.#store ? this.#store.size / 4 : 0;
    for (let i = 0; i < n; i++) {
      const t = b.tokens[i]!;
      if (this.#store && !(Number.isInteger(t) && t >= 0 && t < storeLen)) {
        throw EngineError.invalidArgument(`token index ${t} is outside the store (${storeLen})`);
      }
      if (!this.#store && !(Number.isInteger(t) && t >= 0 && t < c.vocabSize)) {
        throw EngineError.invalidArgument(
          `token id ${t} is outside the vocabulary (size ${c.vocabSize})`,
        );
      }
      if (b.positions[i]! >= c.maxPositionEmbeddings) {
        throw EngineError.invalidArgument(
          `position ${b.positions[i]} is beyond the context (${c.maxPositionEmbeddings})`,
        );
      }
      if (b.slots[i]! >= this.model.kvBlocks * this.model.blockSize) {
        throw EngineError.invalidArgument(`KV slot ${b.slots[i]} is outside the cache`);
      }
    }
    this.#validateStates(b);
    for (const r of b.logitRows) {
      if (!(Number.isInteger(r) && r >= 0 && r < n)) {
        throw EngineError.invalidArgument(`logit row ${r} is not a token of the step`);
      }
    }
  }

  /**
   * Each token's state slot is below the model's `stateSlots`, and one slot's tokens are one
   * run (contiguous, consecutive positions): the convolution kernels read a run's earlier tokens
   * from the step by that layout.
   */
  #validateStates(b: StepBatch): void {
    // A model without recurrent layers reads no state: its batches' slots are not used.
    if (!this.#recurrent) return;
    const slots = b.stateSlots;
    if (slots === undefined) {
      for (let i = 1; i < b.tokens.length; i++) {
        if (b.positions[i] !== b.positions[i - 1]! + 1) {
          throw EngineError.invalidArgument(
            "forward: a step of several sequences of a recurrent model needs stateSlots",
          );
        }
      }
      return;
    }
    const n = b.tokens.length, most = this.model.stateSlots;
    if (slots.length !== n) {
      throw EngineError.invalidArgument("forward: per-token arrays differ in length");
    }
    const seen = new Set<number>();
    for (let i = 0; i < n; i++) {
      const s = slots[i]!;
      if (!(Number.isInteger(s) && s >= 0 && s < most)) {
        throw EngineError.invalidArgument(`state slot ${s} is outside the ${most} slots`);
      }
      const continues = i > 0 && slots[i - 1] === s;
      if (continues && b.positions[i] !== b.positions[i - 1]! + 1) {
        throw EngineError.invalidArgument(
          `state slot ${s}: its tokens' positions are not consecutive`,
        );
      }
      if (!continues && seen.has(s)) {
        throw EngineError.invalidArgument(`state slot ${s}: its tokens are not contiguous`);
      }
      seen.add(s);
    }
  }

  /** Record one step into `encoder` (after writing its inputs); logits land in `logitsBuffer`. */
  async encode(
    encoder: GPUCommandEncoder,
    b: StepBatch,
  ): Promise<{ logits: GPUBuffer; rows: number }> {
    this.#validate(b);
    const tokens = b.tokens.length;
    const rows = b.logitRows.length;
    const s = this.#ensure(tokens, rows, b.blockTable.length);
    let keys = 1;
    for (let i = 0; i < tokens; i++) keys = Math.max(keys, b.positions[i]! + 1);
    const plan = await this.#plan(s, tokens, rows, this.#split(tokens, keys));
    const q = this.model.gpu.device.queue;
    q.writeBuffer(this.#store ? s.index : s.ids, 0, Uint32Array.from(b.tokens));
    q.writeBuffer(s.positions, 0, Uint32Array.from(b.positions));
    q.writeBuffer(s.slots, 0, Uint32Array.from(b.slots));
    if (this.#recurrent) {
      q.writeBuffer(s.stateSlots, 0, Uint32Array.from(b.stateSlots ?? new Uint32Array(tokens)));
    }
    q.writeBuffer(s.tableOffsets, 0, Uint32Array.from(b.tableOffsets));
    if (b.blockTable.length > 0) q.writeBuffer(s.blockTable, 0, Uint32Array.from(b.blockTable));
    encodeDispatches(encoder, plan.body, "forward:body");
    const rowBytes = this.model.config.hiddenSize * 4;
    b.logitRows.forEach((r, i) =>
      encoder.copyBufferToBuffer(s.x, r * rowBytes, s.rows, i * rowBytes, rowBytes)
    );
    if (plan.head.length > 0) encodeDispatches(encoder, plan.head, "forward:lm_head");
    return { logits: s.logits, rows };
  }

  /** Run one step and read its logits back: `[logitRows.length * vocab]`. */
  async run(b: StepBatch): Promise<Float32Array> {
    const device = this.model.gpu.device;
    const encoder = device.createCommandEncoder({ label: "forward" });
    const { logits, rows } = await this.encode(encoder, b);
    device.queue.submit([encoder.finish()]);
    return await readF32(device, logits, rows * this.model.config.vocabSize);
  }

  #release(): void {
    for (const p of this.#plans.values()) for (const b of p.owned) b.destroy();
    this.#plans.clear();
    if (this.#scratch) {
      const { linear, moe, ssm, delta, gatedQuery, partials, ...rest } = this.#scratch;
      const all = [
        ...Object.values(rest),
        ...Object.values(linear),
        ...Object.values(moe ?? {}),
        ...Object.values(ssm ?? {}),
        ...Object.values(delta ?? {}),
        ...Object.values(gatedQuery ?? {}),
        ...(partials ? [partials.ml, partials.acc] : []),
      ];
      for (const v of all) {
        if (typeof v === "object") v.destroy();
      }
      this.#scratch = undefined;
    }
  }

  /** Free the scratch buffers and cached plans (the model's own buffers are untouched). */
  destroy(): void {
    this.#release();
  }
}
