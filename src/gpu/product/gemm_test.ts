import { ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { storageBuffer, uploadBuffer } from "../buffers.ts";
import { dequantize, QUANT_FORMATS, QUANT_TYPES, type QuantType } from "../formats/registry.ts";
import { loadQuantTables } from "../formats/tables.ts";
import { randomBlocks } from "../formats/random_blocks.ts";
import { fusedLinearRef } from "../../reference/kernels/dense.ts";
import { assertSumsClose, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import { asF32, f32Buffer, runRead, seeded } from "../../../test/support/kernel_harness.ts";
import {
  GEMM_CPU_TILE,
  GEMM_GPU_TILE,
  gemmMinRows,
  type GemmTile,
  prepareTiledGemm,
} from "./gemm.ts";
import { prepareFormatProduct } from "./product.ts";
import { type Epilogue, isGated } from "./args.ts";

/**
 * The f32 bound of every product here (`sumsTolerance`, c·u·(√k + 4)·(rms(ref) + |ref|)): c = 2
 * for stored and accumulated products, 3 with SwiGLU (two sums multiplied), as for
 * matvec; the worst measured here on lavapipe (`KILN_TOL_REPORT=1`) is reported in the
 * bench notes.
 */
const SUM_C = 2;
const SWIGLU_C = 3;

/** Row lengths of several blocks, the 32-element formats an odd number (9). */
const K = (t: QuantType) => QUANT_FORMATS[t].blockSize === 32 ? 288 : 768;
/** Activation rows: not a multiple of any tile's rows (32, 24, 5). */
const M = 77;

/**
 * The tiles tested, each in its own pipelines: the two defaults (on lavapipe the `rows` one is
 * the CPU default; the staged one is fitted to the workgroup memory per format), and a small
 * `rows` tile whose edges (24 weight rows, 5 activation rows a workgroup) cut the shapes oddly.
 */
const TILES: readonly GemmTile[] = [
  GEMM_CPU_TILE,
  GEMM_GPU_TILE,
  { kind: "rows", threads: 8, rpt: 3, rb: 5 },
];

interface Case {
  epilogue: Epilogue;
  norm: boolean;
  bias: boolean;
  n: number;
  /** Write into columns [3, 3 + n) of rows n + 5 wide. */
  window: boolean;
  /** The epilogue's scale (default 1). */
  scale?: number;
}

const CASES: readonly Case[] = [
  { epilogue: "store", norm: false, bias: false, n: 37, window: false },
  { epilogue: "store", norm: true, bias: true, n: 13, window: true },
  { epilogue: "accumulate", norm: true, bias: false, n: 37, window: true },
  { epilogue: "accumulate", norm: false, bias: true, n: 13, window: false },
  { epilogue: "swiglu", norm: false, bias: false, n: 13, window: true },
  { epilogue: "swiglu", norm: true, bias: false, n: 37, window: false },
  { epilogue: "geglu", norm: true, bias: false, n: 13, window: true },
  { epilogue: "accumulate", norm: true, bias: true, n: 29, window: true, scale: 0.37 },
  { epilogue: "store", norm: false, bias: true, n: 13, window: false, scale: -0.5 },
];

/** The output [M, ldy] of the product over float64 weights `w` (the reference's last step). */
function reference(
  w: Float64Array,
  x: Float64Array,
  c: Case,
  k: number,
  opts: { gamma: Float64Array; bias: Float64Array; prior: Float64Array },
): Float64Array {
  const y0 = c.window ? 3 : 0;
  const ldy = c.window ? c.n + 5 : c.n;
  const window = new Float64Array(M * c.n);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < c.n; j++) window[i * c.n + j] = opts.prior[i * ldy + y0 + j]!;
  }
  const bias = c.bias ? opts.bias.subarray(y0, y0 + c.n) : undefined;
  const r = fusedLinearRef(x, w, bias, M, c.n, k, {
    ...(c.norm ? { norm: { weight: opts.gamma, eps: 1e-5 } } : {}),
    ...(c.scale !== undefined ? { scale: c.scale } : {}),
    epilogue: c.epilogue,
    y0: window,
  });
  const out = Float64Array.from(opts.prior);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < c.n; j++) out[i * ldy + y0 + j] = r[i * c.n + j]!;
  }
  return out;
}

/**
 * Run case `c` on `tile` and compare with the float64 reference (the format's CPU decode, then
 * the product). Returns the output and the inputs for the mutation checks.
 */
async function runCase(
  device: GPUDevice,
  type: QuantType,
  tile: GemmTile,
  c: Case,
  seed: number,
) {
  const k = K(type);
  const rows = isGated(c.epilogue) ? 2 * c.n : c.n;
  const y0 = c.window ? 3 : 0;
  const ldy = c.window ? c.n + 5 : c.n;
  const bytes = randomBlocks(type, rows * k, seed);
  const x = asF32(seeded(seed + 1, M * k));
  const inputs = {
    gamma: asF32(seeded(seed + 2, k)),
    bias: asF32(seeded(seed + 3, y0 + c.n)),
    prior: asF32(seeded(seed + 4, M * ldy)),
  };
  const y = f32Buffer(device, "gemmq:y", inputs.prior);
  const d = await prepareTiledGemm(device, {
    x: f32Buffer(device, "gemmq:x", x),
    w: uploadBuffer(device, "gemmq:w", bytes),
    y,
    m: M,
    n: c.n,
    k,
    type,
    epilogue: c.epilogue,
    ...(c.scale !== undefined ? { scale: c.scale } : {}),
    tile,
    ...(c.bias ? { bias: f32Buffer(device, "gemmq:b", inputs.bias) } : {}),
    ...(c.norm ? { norm: { weight: f32Buffer(device, "gemmq:g", inputs.gamma), eps: 1e-5 } } : {}),
    ...(c.window ? { ldy, y0 } : {}),
  });
  const got = await runRead(device, [d], y, M * ldy);
  const w = dequantize(type, bytes, rows * k);
  const ref = reference(w, x, c, k, inputs);
  const c_ = isGated(c.epilogue) ? SWIGLU_C : SUM_C;
  assertSumsClose(got, ref, k, c_, `${type} ${tile.kind} ${JSON.stringify(c)}`);
  return { got, w, x, inputs, c_ };
}

/**
 * The one format run on every tile with every case (27 products, 12 pipelines). Epilogues, norm,
 * bias, scale, windows and tile edges are the same code in every format; Q8_0's decode is the
 * simplest, so its pipelines compile fastest (its 27 products took a fifth of Q4_K's on
 * lavapipe), and the sample below runs every case on every tile in the other formats.
 */
const EXHAUSTIVE: QuantType = "Q8_0";

/**
 * A fixed sample of (tile, case) for every other format: each pipeline compiled costs seconds on
 * lavapipe, a product of these shapes milliseconds, so each format gets 5 products in at most 5
 * pipelines instead of 27 in 12. What depends on the format is its decode in each kernel entry
 * (`rows`, staged) and the staged tile's fit to the workgroup memory (halved for the gated
 * epilogues' two weight rows): so every format runs the CPU default tile on case 0 (the mutation
 * test's case) and on a case that turns with the format, the staged tile on an ungated and a gated
 * case and the small `rows` tile on one case, each turning with the format. Over the 24 sampled
 * formats every case runs on every tile (`gemm: the sample ...` checks it).
 */
function sample(type: QuantType): [GemmTile, Case][] {
  const i = QUANT_TYPES.indexOf(type);
  const ungated = CASES.filter((c) => !isGated(c.epilogue));
  const gated = CASES.filter((c) => isGated(c.epilogue));
  return [
    [TILES[0]!, CASES[0]!],
    [TILES[0]!, CASES[1 + i % (CASES.length - 1)]!],
    [TILES[1]!, ungated[i % ungated.length]!],
    [TILES[1]!, gated[i % gated.length]!],
    [TILES[2]!, CASES[(i + 4) % CASES.length]!],
  ];
}

/** Every format's products: all of them for `EXHAUSTIVE`, `sample(type)` for the others. */
function plan(type: QuantType): [GemmTile, Case][] {
  return type === EXHAUSTIVE
    ? TILES.flatMap((tile) => CASES.map((c): [GemmTile, Case] => [tile, c]))
    : sample(type);
}

await loadQuantTables();

for (const type of QUANT_TYPES) {
  const what = type === EXHAUSTIVE
    ? "every epilogue, norm and bias, on each tile"
    : "a fixed sample of epilogues, norms and biases on each tile";
  Deno.test(`gemm ${type}: ${what}; odd m and n, several blocks, output windows`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      let seed = 1000 * (QUANT_TYPES.indexOf(type) + 1);
      for (const [tile, c] of plan(type)) await runCase(device, type, tile, c, seed += 11);
    });
  });
}

Deno.test("gemm: the sample runs every case on every tile over the formats, each format on every tile", () => {
  const sampled = QUANT_TYPES.filter((t) => t !== EXHAUSTIVE);
  const seen = new Set(
    sampled.flatMap((t) =>
      sample(t).map(([tile, c]) => `${TILES.indexOf(tile)} ${CASES.indexOf(c)}`)
    ),
  );
  for (const t of TILES.keys()) {
    for (const c of CASES.keys()) ok(seen.has(`${t} ${c}`), `tile ${t} case ${c} never sampled`);
  }
  for (const type of sampled) {
    const tiles = new Set(sample(type).map(([tile]) => tile));
    equal(tiles.size, TILES.length, type);
    ok(sample(type).some(([tile, c]) => tile === TILES[1] && isGated(c.epilogue)), type);
  }
  equal(plan(EXHAUSTIVE).length, TILES.length * CASES.length);
});

/**
 * The comparison must see the kernel bugs a tiled product is prone to, in every format: the
 * last slice of one weight row left out (a k-step bound off by one), and two groups of 4 weights
 * of one slice swapped (a slice's elements placed at the wrong offsets). The GPU output of a
 * correct kernel is compared with references so mutated; each comparison must fail.
 */
Deno.test("gemm: the comparison fails for a dropped slice or misplaced weights, every format", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const c = CASES[0]!;
    for (const [ti, type] of QUANT_TYPES.entries()) {
      const k = K(type);
      const { got, w, x, inputs, c_ } = await runCase(device, type, TILES[0]!, c, 77 + ti);
      const row = 5;
      const dropped = w.slice();
      dropped.fill(0, row * k + k - 32, (row + 1) * k);
      const swapped = w.slice();
      const at = row * k + 32;
      for (let e = 0; e < 4; e++) {
        swapped[at + e] = w[at + 8 + e]!;
        swapped[at + 8 + e] = w[at + e]!;
      }
      for (const [name, mutated] of [["dropped slice", dropped], ["swapped groups", swapped]]) {
        const ref = reference(mutated as Float64Array, x, c, k, inputs);
        throws(() => assertSumsClose(got, ref, k, c_), `${type}: ${name} passed`);
      }
    }
  });
});

Deno.test("gemm: prepareFormatProduct takes the GEMM above gemmMinRows rows only", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const type = "Q8_0", n = 16, k = 64;
    const w = uploadBuffer(device, "gemmq:w", randomBlocks(type, n * k, 5));
    const min = gemmMinRows(device);
    for (const m of [1, min, min + 1]) {
      const x = storageBuffer(device, "gemmq:x", m * k * 4);
      const y = storageBuffer(device, "gemmq:y", m * n * 4);
      const d = await prepareFormatProduct(device, { x, w, y, m, n, k, type }, "gemmq");
      equal(d.pipeline.label.includes("product/gemm:"), m > min, `m ${m}`);
    }
  });
});

Deno.test("gemm: bad arguments are invalid-argument errors", async () => {
  const { device } = await testGpu();
  const type = "Q4_K", n = 4, k = 256, m = 40;
  const x = storageBuffer(device, "gemmq:x", m * k * 4);
  const y = storageBuffer(device, "gemmq:y", m * n * 4);
  const w = uploadBuffer(device, "gemmq:w", randomBlocks(type, 2 * n * k, 6));
  const base = { x, w, y, m, n, k, type } as const;
  const bad = async (what: string, args: Parameters<typeof prepareTiledGemm>[1]) => {
    let err: unknown;
    try {
      await prepareTiledGemm(device, args);
    } catch (e) {
      err = e;
    }
    ok(err instanceof EngineError && err.type === "InvalidArgument", `${what}: ${err}`);
  };
  await bad("k not whole blocks", { ...base, k: 128 });
  await bad("y too small", { ...base, m: m + 1 });
  await bad("w too small for swiglu", { ...base, n: 2 * n, epilogue: "swiglu" });
  await bad("bias with swiglu", { ...base, epilogue: "swiglu", bias: y });
  await bad("ldy < y0 + n", { ...base, ldy: n, y0: 1 });
  await bad("rows tile too big", { ...base, tile: { kind: "rows", threads: 64, rpt: 9, rb: 8 } });
  await bad("staged tile", { ...base, tile: { ...GEMM_GPU_TILE, bk: 48 } });
  await bad("unknown type", { ...base, type: "Q9_9" as QuantType });
});
