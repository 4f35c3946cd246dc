import {
  type AttentionKnobsRef,
  decodeKv,
  pagedAttentionRef,
  roundKv,
} from "../../reference/kernels/attention.ts";
import { type KvDtype, prepareAttention, prepareKvWrite, ROWS_KEYS } from "./attention.ts";
import type { PathKind } from "../paths.ts";
import { submitDispatches } from "../dispatch.ts";
import { EngineError } from "../../contract/errors.ts";
import { readBuffer } from "../buffers.ts";
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
}

const SHAPES: Record<string, Shape> = {
  gqa: { heads: 4, kvHeads: 2, headDim: 16 },
  // 10 query heads on one kv head: two workgroups of 5 heads each (chunked groups).
  chunked: { heads: 10, kvHeads: 1, headDim: 24 },
  mqa: { heads: 2, kvHeads: 1, headDim: 32 },
  qwen: { heads: 6, kvHeads: 2, headDim: 16 },
  wide: { heads: 2, kvHeads: 2, headDim: 128 },
};
/** The rows kernel's heaviest threads: 256 dims of one head, or 8 heads of 32 dims. */
const HEAD256: Shape = { heads: 4, kvHeads: 1, headDim: 256 };
const GROUP8: Shape = { heads: 8, kvHeads: 1, headDim: 32 };
const BLOCK = 16;
const PATHS: PathKind[] = ["cpu", "gpu"];

/** A shuffled, non-contiguous block table per sequence over a pool of `blocks` blocks. */
function blockTables(lengths: number[], blocks: number): { table: number[]; offsets: number[] } {
  const pool = Array.from({ length: blocks }, (_, i) => i);
  const r = seeded(99, blocks);
  pool.sort((a, b) => r[a]! - r[b]!);
  const table: number[] = [];
  const offsets: number[] = [];
  for (const len of lengths) {
    offsets.push(table.length);
    for (let i = 0; i < Math.ceil(len / BLOCK); i++) table.push(pool.pop()!);
  }
  return { table, offsets };
}

/**
 * Sequences with context `lengths`; the last `queries[i]` tokens of each are queries. Returns
 * GPU output and the float64 reference for the same cache contents. With a window in `knobs`,
 * the keys no query of their sequence sees are NaN in the cache: a kernel that read them at all
 * (even weighted by 0) would give NaN.
 */
async function check(
  name: string,
  shape: Shape,
  lengths: number[],
  queries: number[],
  splits?: number,
  kvDtype: KvDtype = "f32",
  knobs: AttentionKnobsRef = {},
  paths: PathKind = "cpu",
) {
  const { device } = await testGpu(paths);
  await withErrorScopes(device, async () => {
    const { heads, kvHeads, headDim } = shape;
    const blocks = lengths.reduce((n, l) => n + Math.ceil(l / BLOCK), 0) + 3;
    const { table, offsets } = blockTables(lengths, blocks);
    const row = kvHeads * headDim;
    // Fill the cache through the kv_cache kernel, all tokens of every sequence at their slots.
    const total = lengths.reduce((a, b) => a + b, 0);
    const k = asF32(seeded(1, total * row)), v = asF32(seeded(2, total * row));
    const slots: number[] = [];
    lengths.forEach((len, s) => {
      const unseen = knobs.window ? len - queries[s]! + 1 - knobs.window : 0;
      for (let j = 0; j < len; j++) {
        if (j < unseen) {
          k.fill(NaN, slots.length * row, (slots.length + 1) * row);
          v.fill(NaN, slots.length * row, (slots.length + 1) * row);
        }
        slots.push(table[offsets[s]! + Math.floor(j / BLOCK)]! * BLOCK + (j % BLOCK));
      }
    });
    const words = (blocks * BLOCK * row) / (kvDtype === "f16" ? 2 : 1);
    const kCache = outBuffer(device, "att:k", words);
    const vCache = outBuffer(device, "att:v", words);
    const write = await prepareKvWrite(device, {
      k: f32Buffer(device, "att:k_new", k),
      v: f32Buffer(device, "att:v_new", v),
      slots: u32Buffer(device, "att:slots", slots),
      kCache,
      vCache,
      tokens: total,
      kvHeads,
      headDim,
      kvDtype,
    });
    submitDispatches(device, [write], "kv_write");
    const positions: number[] = [], tableOffsets: number[] = [];
    lengths.forEach((len, s) => {
      for (let i = len - queries[s]!; i < len; i++) {
        positions.push(i);
        tableOffsets.push(offsets[s]!);
      }
    });
    const tokens = positions.length;
    const q = asF32(seeded(3, tokens * heads * headDim));
    const { sinks, ...gpuKnobs } = knobs;
    const out = outBuffer(device, "att:out", tokens * heads * headDim);
    // The cpu paths take the `rows` kernel where each split holds at most ROWS_KEYS keys.
    const maxKeys = Math.max(...lengths);
    const want_kernel = paths === "cpu" && headDim % 4 === 0 &&
        Math.ceil(maxKeys / (splits ?? 1)) <= ROWS_KEYS
      ? "rows"
      : "tiles";
    const { dispatches, kernel } = await prepareAttention(device, {
      q: f32Buffer(device, "att:q", q),
      kCache,
      vCache,
      positions: u32Buffer(device, "att:pos", positions),
      tableOffsets: u32Buffer(device, "att:off", tableOffsets),
      blockTable: u32Buffer(device, "att:table", table),
      out,
      tokens,
      heads,
      kvHeads,
      headDim,
      blockSize: BLOCK,
      ...(splits ? { splits } : {}),
      maxKeys,
      kvDtype,
      ...gpuKnobs,
      ...(sinks ? { sinks: f32Buffer(device, "att:sinks", sinks) } : {}),
    });
    if (kernel !== want_kernel) throw new Error(`${name}: ${kernel} took it, not ${want_kernel}`);
    const got = await runRead(device, dispatches, out, tokens * heads * headDim);
    const cache = {
      k: decodeKv(await readBuffer(device, kCache), kvDtype),
      v: decodeKv(await readBuffer(device, vCache), kvDtype),
      blockSize: BLOCK,
      kvHeads,
      headDim,
      blockTable: table,
    };
    // The cache holds exactly the written values, rounded as its dtype stores them.
    const slotOf = new Map(slots.map((slot, i) => [slot, i]));
    for (const [slot, i] of slotOf) {
      for (let c = 0; c < row; c++) {
        if (!Object.is(cache.k[slot * row + c], roundKv(k[i * row + c]!, kvDtype))) {
          throw new Error(`${name}: k cache slot ${slot} col ${c} not the written value`);
        }
      }
    }
    const want = pagedAttentionRef(q, cache, positions, tableOffsets, heads, knobs);
    assertClose(got, want, ATTN_TOL, ATTN_TOL, name);
    if (sinks) {
      // The sinks move the output: the comparison above could see them missing.
      const plain = pagedAttentionRef(q, cache, positions, tableOffsets, heads, gpuKnobs);
      const moved = want.reduce((m, w, i) => Math.max(m, Math.abs(w - plain[i]!)), 0);
      if (!(moved > 0.01)) throw new Error(`${name}: sinks move the output by only ${moved}`);
    }
  });
}

for (const [name, shape] of Object.entries(SHAPES)) {
  Deno.test(`attention ${name}: prefill over contexts 1, 15, 17, 100 in one varlen batch`, async () => {
    for (const paths of PATHS) {
      await check(
        `${name}/${paths}`,
        shape,
        [1, 15, 17, 100],
        [1, 15, 17, 100],
        1,
        "f32",
        {},
        paths,
      );
    }
  });
  Deno.test(`attention ${name}: chunked prefill (a second chunk attends to cached keys)`, async () => {
    for (const paths of PATHS) {
      for (const splits of [1, 2]) {
        await check(
          `${name}/${paths}/${splits}`,
          shape,
          [40, 300],
          [9, 33],
          splits,
          "f32",
          {},
          paths,
        );
      }
    }
  });
  Deno.test(`attention ${name}: decode, single pass and split along the keys`, async () => {
    for (const paths of PATHS) {
      await check(`${name}/single/${paths}`, shape, [1, 17, 300], [1, 1, 1], 1, "f32", {}, paths);
      await check(`${name}/split3/${paths}`, shape, [1, 17, 300], [1, 1, 1], 3, "f32", {}, paths);
      await check(`${name}/split7/${paths}`, shape, [5, 300], [1, 1], 7, "f32", {}, paths);
    }
  });
}

// Long contexts through the rows kernel (each thread's keys under lavapipe's loop limiter, which
// ends an invocation's loops after 65535 iterations in all: one thread over 2000 keys of these
// shapes would stop early and give another answer), and through the tiles.
Deno.test("attention: 3000 and 5000 keys, decode split as the step plans do, f16 cache", async () => {
  const shapes: [string, Shape][] = [
    ["gqa", SHAPES.gqa!],
    ["wide", SHAPES.wide!],
    ["d256", HEAD256],
    ["group8", GROUP8],
  ];
  for (const [name, shape] of shapes) {
    for (const paths of PATHS) {
      const splits = paths === "cpu" ? Math.ceil(5000 / ROWS_KEYS) : 32;
      await check(`${name}/long/${paths}`, shape, [3000, 5000], [1, 2], splits, "f16", {}, paths);
    }
  }
});

Deno.test("attention gqa: f16 cache written by kv_write, prefill and split decode", async () => {
  const shape = SHAPES.gqa!;
  await check("gqa/f16", shape, [1, 15, 17, 100], [1, 15, 17, 100], undefined, "f16");
  await check("gqa/f16/split3", shape, [1, 17, 300], [1, 1, 1], 3, "f16");
});

// A sliding window (shorter than a block, and spanning several), a soft-cap that bites (scores
// reach ~3, capped at 1.5) and a scale of its own; keys outside every query's window are NaN.
Deno.test("attention gqa/qwen: sliding window, soft-cap and scale; prefill, chunks, split decode", async () => {
  for (const [name, shape] of [["gqa", SHAPES.gqa!], ["qwen", SHAPES.qwen!]] as const) {
    for (const window of [13, 37]) {
      const knobs = { window, softcap: 1.5, scale: 0.4 };
      const what = `${name}/window${window}`;
      await check(`${what}/prefill`, shape, [1, 15, 17, 100], [1, 15, 17, 100], 1, "f32", knobs);
      await check(`${what}/chunk`, shape, [40, 300], [9, 33], 1, "f32", knobs);
      await check(`${what}/split3`, shape, [1, 17, 300], [1, 1, 1], 3, "f32", knobs);
    }
  }
  await check("gqa/f16/window", SHAPES.gqa!, [5, 300], [1, 1], 7, "f16", { window: 21 });
});

// Attention sinks (gpt-oss): one logit per query head in the softmax's denominator, from below
// the scores (about ±1) to well above them, exactly representable in f32. Every path: varlen
// prefill, a chunk over cached keys, single and split decode, windows, an f16 cache, chunked
// head groups (the sink of head h0 + g).
Deno.test("attention sinks: prefill, chunks, single and split decode, windows, f16, chunked groups", async () => {
  const sinksOf = (heads: number) =>
    Array.from({ length: heads }, (_, h) => asF32([((h * 7) % 11) * 0.45 - 1.5])[0]!);
  for (const name of ["gqa", "qwen", "chunked", "wide"] as const) {
    const shape = SHAPES[name]!;
    const knobs = { sinks: sinksOf(shape.heads) };
    await check(
      `${name}/sinks/prefill`,
      shape,
      [1, 15, 17, 100],
      [1, 15, 17, 100],
      1,
      "f32",
      knobs,
    );
    await check(`${name}/sinks/chunk`, shape, [40, 300], [9, 33], 1, "f32", knobs);
    await check(`${name}/sinks/decode`, shape, [1, 17, 300], [1, 1, 1], 1, "f32", knobs);
    await check(`${name}/sinks/split3`, shape, [1, 17, 300], [1, 1, 1], 3, "f32", knobs);
  }
  const windowed = { sinks: sinksOf(6), window: 13, scale: 0.4 };
  await check(
    "qwen/sinks/window/prefill",
    SHAPES.qwen!,
    [1, 15, 17, 100],
    [1, 15, 17, 100],
    1,
    "f32",
    windowed,
  );
  await check("qwen/sinks/window/split7", SHAPES.qwen!, [5, 300], [1, 1], 7, "f32", windowed);
  await check("gqa/sinks/f16/split3", SHAPES.gqa!, [1, 17, 300], [1, 1, 1], 3, "f16", {
    sinks: sinksOf(4),
  });
  // A sink far above every score (e^40 over the keys' sum): the output is tiny but exact.
  await check("gqa/sinks/large", SHAPES.gqa!, [17, 40], [17, 1], 1, "f32", {
    sinks: [40, -40, 3, 0],
  });
});

Deno.test("attention refuses a bad window, soft-cap, scale or sinks buffer", async () => {
  const { device } = await testGpu();
  const b = outBuffer(device, "att:bad", 64);
  const base = {
    q: b,
    kCache: b,
    vCache: b,
    positions: b,
    tableOffsets: b,
    blockTable: b,
    out: b,
    tokens: 1,
    heads: 2,
    kvHeads: 1,
    headDim: 8,
    blockSize: BLOCK,
  };
  const sinks = outBuffer(device, "att:one_sink", 1); // 4 bytes for 2 heads
  for (
    const [knob, bad] of [["window", 2.5], ["softcap", -1], ["scale", 0], ["sinks", sinks]] as const
  ) {
    const e = await prepareAttention(device, { ...base, [knob]: bad }).then(
      () => undefined,
      (e) => e,
    );
    if (!(e instanceof EngineError) || e.type !== "InvalidArgument" || !e.message.includes(knob)) {
      throw new Error(`${knob} ${bad}: expected InvalidArgument naming it, got ${e}`);
    }
  }
});
