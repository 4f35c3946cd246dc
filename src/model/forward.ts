/**
 * The transformer forward pass as replayable GPU plans. A plan is built once per (tokens in
 * the step, logit rows) and reused every step; per-step data (token ids, positions, KV slots,
 * block tables) is written into storage buffers before each submit.
 *
 * Per layer, at decode (at most `MATVEC_MAX_M` tokens), six or seven dispatches:
 *   1. q/k/v as one product (stacked weights, + bias), with the input RMSNorm folded in;
 *   2. RoPE on q and k fused with the KV cache write;
 *   3. paged attention (one pass, or split-K and a merge for long contexts);
 *   4. o_proj with the residual add in its epilogue;
 *   5. gate and up as one product, post-attention RMSNorm folded in, SwiGLU in its epilogue;
 *   6. down_proj with the residual add in its epilogue.
 * Prefill shapes run the same steps with the norms, adds and SwiGLU as their own dispatches
 * around the tiled products. Then the rows whose logits are wanted are copied out of the
 * residual stream and multiplied by the LM head with the final norm folded in.
 */
import { EngineError } from "../contract/errors.ts";
import { readF32, storageBuffer } from "../gpu/buffers.ts";
import { type Dispatch, encodeDispatches } from "../gpu/dispatch.ts";
import { chooseSplits, prepareAttention, prepareRopeKv } from "../gpu/kernels/attention.ts";
import { prepareEmbedding } from "../gpu/kernels/dense.ts";
import { isCpuAdapter } from "../gpu/device.ts";
import { isFloatDtype } from "../gpu/dtype.ts";
import type { LinearScratch } from "../gpu/kernels/linear.ts";
import { prepareQuantEmbedding } from "../gpu/kernels/matvec_quant.ts";
import { prepareProduct, type ProductArgs } from "../gpu/kernels/product.ts";
import { prepareGather } from "../gpu/kernels/tokens.ts";
import type { GpuModel } from "./gpu_model.ts";

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
}

interface Scratch {
  capacity: number;
  tableCapacity: number;
  index: GPUBuffer;
  ids: GPUBuffer;
  positions: GPUBuffer;
  slots: GPUBuffer;
  tableOffsets: GPUBuffer;
  blockTable: GPUBuffer;
  /** The residual stream [tokens, hidden]. */
  x: GPUBuffer;
  /** The fused q/k/v product [tokens, q + 2kv]. */
  qkv: GPUBuffer;
  /** Rotated q [tokens, q], and attention's output. */
  q: GPUBuffer;
  attn: GPUBuffer;
  /** SwiGLU's output [tokens, intermediate]. */
  act: GPUBuffer;
  /** What the unfused (prefill) products need in between. */
  linear: LinearScratch;
  rows: GPUBuffer;
  logits: GPUBuffer;
}

interface Plan {
  body: Dispatch[];
  head: Dispatch[];
  owned: GPUBuffer[];
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
   * context on a GPU, and 1 on a CPU adapter.
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

  /** A forward over `model`; scratch buffers are allocated on the first step. */
  constructor(readonly model: GpuModel, options: ForwardOptions = {}) {
    this.#store = options.tokensFrom;
    this.#splits = options.attentionSplits;
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
    this.#scratch = {
      capacity: cap,
      tableCapacity: table,
      index: f("index", cap),
      ids: f("ids", cap),
      positions: f("positions", cap),
      slots: f("slots", cap),
      tableOffsets: f("table_offsets", cap),
      blockTable: f("block_table", table),
      x: f("x", cap * c.hiddenSize),
      qkv: f("qkv", cap * (Q + 2 * KV)),
      q: f("q", cap * Q),
      attn: f("attn", cap * Q),
      act: f("act", cap * c.intermediateSize),
      linear: {
        normed: f("normed", cap * widest),
        product: f("product", cap * 2 * c.intermediateSize),
      },
      rows: f("rows", cap * c.hiddenSize),
      logits: f("logits", cap * c.vocabSize),
    };
    return this.#scratch;
  }

  async #plan(s: Scratch, tokens: number, rows: number): Promise<Plan> {
    const key = `${tokens}:${rows}`;
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
    const m = this.model;
    const c = m.config;
    const d = m.gpu.device;
    const body: Dispatch[] = [];
    const owned: GPUBuffer[] = [];
    const add = (x: Dispatch & { uniform?: GPUBuffer }) => {
      body.push(x);
      if (x.uniform) owned.push(x.uniform);
    };
    const H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim;
    if (this.#store) {
      add(
        await prepareGather(d, { store: this.#store, index: s.index, ids: s.ids, count: tokens }),
      );
    }
    // The embedding, one dispatch per part of the table (a big vocabulary is split by rows).
    let row0 = 0;
    for (const [i, part] of m.embed.parts.entries()) {
      const args = {
        ids: s.ids,
        table: part.buffer,
        out: s.x,
        tokens,
        hidden: H,
        vocab: c.vocabSize,
        rowStart: row0,
        rowEnd: row0 + part.rows,
      };
      const label = m.embed.parts.length > 1 ? `embed.${i}` : "embed";
      add(
        isFloatDtype(part.dtype)
          ? await prepareEmbedding(d, { ...args, dtype: part.dtype }, label)
          : await prepareQuantEmbedding(d, { ...args, type: part.dtype }, label),
      );
      row0 += part.rows;
    }
    const linear = async (args: Omit<ProductArgs, "m">, label: string, xRows = tokens) => {
      for (const x of await prepareProduct(d, { ...args, m: xRows }, s.linear, label)) add(x);
    };
    // Split-K decode spreads one sequence's keys over many workgroups: a GPU needs that for
    // long contexts; a CPU adapter has enough workgroups in the heads and only pays the merge.
    const splits = tokens > 4
      ? 1
      : this.#splits ?? (isCpuAdapter(d) ? 1 : chooseSplits(c.maxPositionEmbeddings));
    const kvDtype = m.kvDtype;
    for (let l = 0; l < c.numLayers; l++) {
      const L = m.layers[l]!;
      await linear({
        x: s.x,
        weight: L.qkv,
        ...(L.qkvBias ? { b: L.qkvBias } : {}),
        y: s.qkv,
        n: Q + 2 * KV,
        k: H,
        norm: { weight: L.inputNorm, eps: c.rmsNormEps },
      }, `L${l}:qkv`);
      add(
        await prepareRopeKv(d, {
          qkv: s.qkv,
          q: s.q,
          positions: s.positions,
          invFreq: m.invFreq,
          slots: s.slots,
          kCache: m.kCache[l]!,
          vCache: m.vCache[l]!,
          tokens,
          heads: c.numHeads,
          kvHeads: c.numKvHeads,
          headDim: c.headDim,
          kvDtype,
        }, `L${l}:rope_kv`),
      );
      const att = await prepareAttention(d, {
        q: s.q,
        kCache: m.kCache[l]!,
        vCache: m.vCache[l]!,
        positions: s.positions,
        tableOffsets: s.tableOffsets,
        blockTable: s.blockTable,
        out: s.attn,
        tokens,
        heads: c.numHeads,
        kvHeads: c.numKvHeads,
        headDim: c.headDim,
        blockSize: m.blockSize,
        splits,
        kvDtype,
      }, `L${l}:attention`);
      body.push(...att.dispatches);
      owned.push(...att.owned);
      await linear(
        { x: s.attn, weight: L.o, y: s.x, n: H, k: Q, epilogue: "accumulate" },
        `L${l}:o`,
      );
      await linear({
        x: s.x,
        weight: L.gateUp,
        y: s.act,
        n: c.intermediateSize,
        k: H,
        norm: { weight: L.postNorm, eps: c.rmsNormEps },
        epilogue: "swiglu",
      }, `L${l}:gate_up`);
      await linear({
        x: s.act,
        weight: L.down,
        y: s.x,
        n: H,
        k: c.intermediateSize,
        epilogue: "accumulate",
      }, `L${l}:down`);
    }
    const bodyLength = body.length;
    // The LM head reads the wanted rows of x (copied out after the body) through the final norm.
    await linear(
      {
        x: s.rows,
        weight: m.lmHead,
        y: s.logits,
        n: c.vocabSize,
        k: H,
        norm: { weight: m.finalNorm, eps: c.rmsNormEps },
      },
      "lm_head",
      rows,
    );
    const head = body.splice(bodyLength);
    const plan = { body, head, owned };
    this.#plans.set(key, plan);
    return plan;
  }

  /**
   * GPU dispatches one step of `tokens` tokens with `rows` logit rows records (the body and the
   * LM head): what the benchmark reports as dispatches per step.
   */
  async dispatchesPerStep(tokens: number, rows: number): Promise<number> {
    const s = this.#ensure(tokens, rows, 1);
    const plan = await this.#plan(s, tokens, rows);
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
    for (const r of b.logitRows) {
      if (!(Number.isInteger(r) && r >= 0 && r < n)) {
        throw EngineError.invalidArgument(`logit row ${r} is not a token of the step`);
      }
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
    const plan = await this.#plan(s, tokens, rows);
    const q = this.model.gpu.device.queue;
    q.writeBuffer(this.#store ? s.index : s.ids, 0, Uint32Array.from(b.tokens));
    q.writeBuffer(s.positions, 0, Uint32Array.from(b.positions));
    q.writeBuffer(s.slots, 0, Uint32Array.from(b.slots));
    q.writeBuffer(s.tableOffsets, 0, Uint32Array.from(b.tableOffsets));
    if (b.blockTable.length > 0) q.writeBuffer(s.blockTable, 0, Uint32Array.from(b.blockTable));
    encodeDispatches(encoder, plan.body, "forward:body");
    const rowBytes = this.model.config.hiddenSize * 4;
    b.logitRows.forEach((r, i) =>
      encoder.copyBufferToBuffer(s.x, r * rowBytes, s.rows, i * rowBytes, rowBytes)
    );
    encodeDispatches(encoder, plan.head, "forward:lm_head");
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
      const { linear, ...rest } = this.#scratch;
      for (const v of [...Object.values(rest), ...Object.values(linear)]) {
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
