/**
 * Fused RoPE + KV write and GQA-aware attention over f32 and f16 caches, on odd shapes: 9/3 and
 * 14/2 heads, MHA and MQA (chunked groups), head_dim 40, 64, 72 and 256, odd token counts,
 * positions crossing 16-key blocks, padding slots, varlen prefill and single/split decode.
 */
import { rejects } from "node:assert/strict";
import { decodeKv, pagedAttentionRef, ropeKvRef } from "../../reference/kernels/attention.ts";
import { type KvDtype, prepareAttention, prepareKvWrite, prepareRopeKv } from "./attention.ts";
import { uploadRopeFrequencies } from "./rope_frequencies.ts";
import { readBuffer } from "../buffers.ts";
import { EngineError } from "../../contract/errors.ts";
import { assertClose, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import {
  asF32,
  ATTN_TOL,
  f32Buffer,
  outBuffer,
  runRead,
  seeded,
  u32Buffer,
} from "../../../test/support/kernel_harness.ts";

interface Shape {
  heads: number;
  kvHeads: number;
  headDim: number;
  /** Rotated elements per head (partial rotary; 0: no RoPE); default all. */
  rotaryDim?: number;
  /** Attention's score scale (default 1/sqrt(headDim)). */
  scale?: number;
  /** The rotated elements' factor (default 1). */
  rotaryScale?: number;
}

const SHAPES: Record<string, Shape> = {
  "smollm 9/3 d64": { heads: 9, kvHeads: 3, headDim: 64 },
  "9/3 d40": { heads: 9, kvHeads: 3, headDim: 40 },
  "qwen 14/2 d72": { heads: 14, kvHeads: 2, headDim: 72 },
  "mha 3/3 d16": { heads: 3, kvHeads: 3, headDim: 16 },
  "mqa 10/1 d32 (two chunks of 5)": { heads: 10, kvHeads: 1, headDim: 32 },
  "8/2 d256": { heads: 8, kvHeads: 2, headDim: 256 },
  "partial rotary 9/3 d40, 22 rotated": { heads: 9, kvHeads: 3, headDim: 40, rotaryDim: 22 },
  "no rope 5/1 d24": { heads: 5, kvHeads: 1, headDim: 24, rotaryDim: 0 },
  "scale 0.3 6/2 d18": { heads: 6, kvHeads: 2, headDim: 18, scale: 0.3 },
  "longrope 6/3 d40, 30 rotated x1.19": {
    heads: 6,
    kvHeads: 3,
    headDim: 40,
    rotaryDim: 30,
    rotaryScale: 1.19,
  },
};
const BLOCK = 16;
const PAD = 0xffffffff;
const bytesOf = (kvDtype: KvDtype) => (kvDtype === "f16" ? 2 : 4);

/**
 * Sequences of `lengths` tokens in shuffled blocks, written in one rope_kv dispatch with a
 * padding token after each sequence; then varlen prefill attention over every token, and
 * decode (a fresh query at the last position of each sequence) single-pass and split.
 */
async function check(name: string, shape: Shape, kvDtype: KvDtype, lengths: number[]) {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const { heads, kvHeads, headDim } = shape;
    const rotaryDim = shape.rotaryDim ?? headDim;
    const blocks = lengths.reduce((n, l) => n + Math.ceil(l / BLOCK), 0) + 2;
    const order = Array.from({ length: blocks }, (_, i) => i).reverse();
    const table: number[] = [], offsets: number[] = [];
    const positions: number[] = [], slots: number[] = [], tableOffsets: number[] = [];
    lengths.forEach((len) => {
      offsets.push(table.length);
      for (let b = 0; b < Math.ceil(len / BLOCK); b++) table.push(order.pop()!);
      for (let j = 0; j < len; j++) {
        positions.push(j);
        slots.push(table[offsets.at(-1)! + Math.floor(j / BLOCK)]! * BLOCK + (j % BLOCK));
        tableOffsets.push(offsets.at(-1)!);
      }
      positions.push(len - 1); // padding: attends like the last token, writes nothing
      slots.push(PAD);
      tableOffsets.push(offsets.at(-1)!);
    });
    const tokens = positions.length;
    const row = (heads + 2 * kvHeads) * headDim;
    const qkv = asF32(seeded(5, tokens * row));
    const invFreq = Array.from(
      { length: Math.max(rotaryDim, 2) / 2 },
      (_, i) => 10000 ** (-(2 * i) / Math.max(rotaryDim, 2)),
    );
    const cacheElems = blocks * BLOCK * kvHeads * headDim;
    const kCache = outBuffer(device, "gqa:k_cache", cacheElems * bytesOf(kvDtype) / 4);
    const vCache = outBuffer(device, "gqa:v_cache", cacheElems * bytesOf(kvDtype) / 4);
    const qOut = outBuffer(device, "gqa:q", tokens * heads * headDim);
    const posBuf = u32Buffer(device, "gqa:pos", positions);
    const rope = await prepareRopeKv(device, {
      qkv: f32Buffer(device, "gqa:qkv", qkv),
      q: qOut,
      positions: posBuf,
      frequencies: uploadRopeFrequencies(device, "gqa:rope_frequencies", invFreq),
      slots: u32Buffer(device, "gqa:slots", slots),
      kCache,
      vCache,
      tokens,
      heads,
      kvHeads,
      headDim,
      rotaryDim,
      ...(shape.rotaryScale !== undefined ? { rotaryScale: shape.rotaryScale } : {}),
      kvDtype,
    });
    const q = await runRead(device, [rope], qOut, tokens * heads * headDim);
    const k = decodeKv(await readBuffer(device, kCache), kvDtype);
    const v = decodeKv(await readBuffer(device, vCache), kvDtype);
    const zeros = new Float64Array(cacheElems);
    const ref = ropeKvRef(qkv, positions, invFreq, slots, zeros, zeros, { ...shape, kvDtype });
    // f16: the GPU rounds its f32 result, which may sit across a rounding boundary: one ulp.
    const eps = kvDtype === "f16" ? 2 ** -10 : 1e-5;
    assertClose(q, ref.q, 1e-5, 1e-5, `${name}: rope q`);
    assertClose(k, ref.k, 1e-5, eps, `${name}: k cache`);
    assertClose(v, ref.v, 0, 0, `${name}: v cache`);

    const cache = { k, v, blockSize: BLOCK, kvHeads, headDim, blockTable: table };
    const common = {
      kCache,
      vCache,
      blockTable: u32Buffer(device, "gqa:table", table),
      heads,
      kvHeads,
      headDim,
      blockSize: BLOCK,
      kvDtype,
      ...(shape.scale !== undefined ? { scale: shape.scale } : {}),
    };
    const prefillOut = outBuffer(device, "gqa:prefill_out", tokens * heads * headDim);
    const prefill = await prepareAttention(device, {
      ...common,
      q: qOut,
      positions: posBuf,
      tableOffsets: u32Buffer(device, "gqa:off", tableOffsets),
      out: prefillOut,
      tokens,
    });
    const got = await runRead(device, prefill.dispatches, prefillOut, tokens * heads * headDim);
    const knobs = shape.scale === undefined ? {} : { scale: shape.scale };
    const want = pagedAttentionRef(q, cache, positions, tableOffsets, heads, knobs);
    assertClose(got, want, ATTN_TOL, ATTN_TOL, `${name}: prefill`);

    const decPos = lengths.map((l) => l - 1);
    const dq = asF32(seeded(7, lengths.length * heads * headDim));
    const decodeRef = pagedAttentionRef(
      dq,
      cache,
      decPos,
      offsets,
      heads,
      shape.scale === undefined ? {} : { scale: shape.scale },
    );
    for (const splits of [1, 3, 7]) {
      const out = outBuffer(device, "gqa:decode_out", dq.length);
      const dec = await prepareAttention(device, {
        ...common,
        q: f32Buffer(device, "gqa:dq", dq),
        positions: u32Buffer(device, "gqa:dpos", decPos),
        tableOffsets: u32Buffer(device, "gqa:doff", offsets),
        out,
        tokens: lengths.length,
        splits,
      }, `gqa:decode/${splits}`);
      const dgot = await runRead(device, dec.dispatches, out, dq.length);
      assertClose(dgot, decodeRef, ATTN_TOL, ATTN_TOL, `${name}: decode split ${splits}`);
    }
  });
}

for (const [name, shape] of Object.entries(SHAPES)) {
  for (const kvDtype of ["f32", "f16"] as const) {
    Deno.test(`rope_kv + attention ${name} ${kvDtype}: varlen prefill 1/19/70, decode`, () =>
      check(`${name} ${kvDtype}`, shape, kvDtype, [1, 19, 70]));
  }
}

Deno.test("rope_kv + attention: a 131-token sequence (tiles of 64 keys, 9 blocks) in f16", () =>
  check("long f16", SHAPES["smollm 9/3 d64"]!, "f16", [131]));

Deno.test("attention wrappers refuse bad shapes with an InvalidArgument EngineError", async () => {
  const { device } = await testGpu();
  const b = outBuffer(device, "gqa:dummy", 64);
  const refuse = (f: () => Promise<unknown>) =>
    rejects(f, (e: unknown) => e instanceof EngineError && e.type === "InvalidArgument");
  const kv = { k: b, v: b, slots: b, kCache: b, vCache: b, tokens: 1, kvHeads: 1 };
  await refuse(() => prepareKvWrite(device, { ...kv, headDim: 3, kvDtype: "f16" }));
  const rope = { qkv: b, q: b, positions: b, frequencies: b, slots: b, kCache: b, vCache: b };
  await refuse(() =>
    prepareRopeKv(device, { ...rope, tokens: 1, heads: 2, kvHeads: 1, headDim: 5, kvDtype: "f16" })
  );
  for (const rotaryDim of [5, 18, -2]) {
    await refuse(() =>
      prepareRopeKv(device, {
        ...rope,
        tokens: 1,
        heads: 2,
        kvHeads: 1,
        headDim: 16,
        rotaryDim,
        kvDtype: "f32",
      })
    );
  }
  const att = {
    q: b,
    kCache: b,
    vCache: b,
    positions: b,
    tableOffsets: b,
    blockTable: b,
    out: b,
    tokens: 1,
    blockSize: 16,
  };
  await refuse(() => prepareAttention(device, { ...att, heads: 9, kvHeads: 2, headDim: 64 }));
  await refuse(() => prepareAttention(device, { ...att, heads: 2, kvHeads: 1, headDim: 512 }));
  await refuse(() =>
    prepareAttention(device, { ...att, heads: 2, kvHeads: 1, headDim: 7, kvDtype: "f16" })
  );
});
