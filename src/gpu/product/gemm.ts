/**
 * The tiled product kernel for prefill (`shaders/product/gemm.wgsl`, composed per format with the
 * format's decoder like `matvec.wgsl`, through the format contract only): the weights are decoded
 * once per tile of many activation rows, where the matrix-vector kernel decodes them again for
 * every 8. On a GPU each workgroup stages a tile of weight rows in workgroup memory once per
 * k-step (`main`); on a CPU adapter, where every read of workgroup memory is a per-invocation
 * load, each thread decodes its own weight rows into registers once per 32 activation rows
 * (`rows`). Same arguments, fused work (RMSNorm, bias, residual add, SwiGLU) and output windows
 * as `prepareMatvec`; `prepareFormatProduct` (`product.ts`) picks between the two by the number of rows.
 */
import { kernelPaths } from "../paths.ts";
import type { WeightFormat } from "../formats/format.ts";
import { shaderVariant } from "../shader_compose.ts";
import { fail, type KernelDispatch, prepareKernel } from "../kernels/kernel.ts";
import {
  checkProduct,
  epilogueConstants,
  isGated,
  PRODUCT_UNIFORM_FLOATS,
  productBindings,
  type ProductKernelArgs,
  productUniform,
} from "./args.ts";

/**
 * The `main` entry's tile (GPUs): thread (tn, tm) of wgN × wgM computes `tn` output columns
 * (weight rows, `wgN` apart) of `tm` activation rows (`wgM` apart); a workgroup covers
 * tn·wgN columns × tm·wgM rows and stages its weight rows in workgroup memory `bk` elements at a
 * time.
 */
export interface GemmStagedTile {
  kind: "staged";
  /** Threads along n. */
  wgN: number;
  /** Threads along m. */
  wgM: number;
  /** Output columns per thread, 1 to 16. */
  tn: number;
  /** Activation rows per thread, 1 to 4. */
  tm: number;
  /** Elements of k per step, a multiple of 32; rounded up to whole blocks of the format. */
  bk: number;
  /** vec4 of padding per staged row (0 or 1; against bank conflicts on a GPU). */
  pad: number;
}

/**
 * The `rows` entry's tile (CPU adapters): `threads` threads each own `rpt` weight rows, decoded
 * slice by slice into registers, of `rb` activation rows.
 */
export interface GemmRowsTile {
  kind: "rows";
  /** Threads per workgroup. */
  threads: number;
  /** Weight rows per thread, 1 to 8. */
  rpt: number;
  /** Activation rows per workgroup, 1 to 32. */
  rb: number;
}

export type GemmTile = GemmStagedTile | GemmRowsTile;

/**
 * CPU adapters: 16 threads of 8 weight rows, 32 activation rows per workgroup. On lavapipe
 * (`bench/kernels/gemm_quant.ts --sweep`, SmolLM2's 1536 × 576 and 576 × 1536 at 512 rows, by CPU time)
 * 8 weight rows per thread took 0.65 of the time of 4 and 0.85 of 6 (each load of x serves them
 * all); 32 activation rows 0.8 of 16; 8 to 32 threads did the same.
 */
export const GEMM_CPU_TILE: Readonly<GemmRowsTile> = {
  kind: "rows",
  threads: 16,
  rpt: 8,
  rb: 32,
};

/**
 * GPUs: a 64 × 64 output tile of 4 × 4 per thread, like the float GEMM's, fitted to the
 * workgroup memory by `fitGemmTile`. Correct on lavapipe; its speed on a GPU is not measured.
 */
export const GEMM_GPU_TILE: Readonly<GemmStagedTile> = {
  kind: "staged",
  wgN: 16,
  wgM: 16,
  tn: 4,
  tm: 4,
  bk: 32,
  pad: 1,
};

/**
 * Activation rows above which `prepareFormatProduct` takes the tiled GEMM: the device's kernel
 * paths' `gemmAboveRows` (`../paths.ts`: above 3 on the cpu paths, above 32 on the gpu paths).
 */
export function gemmMinRows(device: GPUDevice): number {
  return kernelPaths(device).gemmAboveRows;
}

/** Bytes of workgroup memory a tile stages (`rows` weight rows of bk/4 + pad vec4). */
export function gemmTileBytes(t: GemmStagedTile, swiglu: boolean): number {
  return t.tn * t.wgN * (swiglu ? 2 : 1) * (t.bk / 4 + t.pad) * 16;
}

/**
 * `tile` fitted to format `f` and the device: bk rounded up to whole blocks, then tn halved
 * (and after it wgN) until the staged rows fit the workgroup memory.
 */
export function fitGemmTile(
  device: GPUDevice,
  f: WeightFormat,
  tile: GemmStagedTile,
  swiglu: boolean,
): GemmStagedTile {
  const what = "gemm";
  const ok = [tile.wgN, tile.wgM, tile.tn, tile.tm, tile.bk, tile.pad].every(Number.isInteger) &&
    tile.wgN >= 1 && tile.wgM >= 1 && tile.tn >= 1 && tile.tn <= 16 && tile.tm >= 1 &&
    tile.tm <= 4 && tile.bk >= 32 && tile.bk % 32 === 0 && (tile.pad === 0 || tile.pad === 1);
  if (!ok) fail(what, `bad tile ${JSON.stringify(tile)}`);
  const t = { ...tile, bk: Math.ceil(tile.bk / f.blockSize) * f.blockSize };
  const limit = device.limits.maxComputeWorkgroupStorageSize;
  while (gemmTileBytes(t, swiglu) > limit) {
    if (t.tn > 1) t.tn = Math.ceil(t.tn / 2);
    else if (t.wgN > 1) t.wgN = Math.ceil(t.wgN / 2);
    else fail(what, `a ${t.bk}-element step of ${f.type} weights exceeds the workgroup memory`);
  }
  const lim = device.limits;
  if (
    t.wgN * t.wgM > lim.maxComputeInvocationsPerWorkgroup ||
    t.wgN > lim.maxComputeWorkgroupSizeX || t.wgM > lim.maxComputeWorkgroupSizeY
  ) {
    fail(what, `tile ${JSON.stringify(t)} exceeds the device's workgroup limits`);
  }
  return t;
}

/** `prepareMatvec`'s arguments, and optionally another tile (tests, benchmarks). */
export interface TiledGemmArgs extends ProductKernelArgs {
  /** Default: the kernel paths' `gemmTile`, `GEMM_CPU_TILE` or `GEMM_GPU_TILE`. */
  tile?: GemmTile;
}

/**
 * r[i, j] = s_i·Σₖ x[i, k]·g[k]·W[j, k] + bias[y0 + j] with the epilogue, exactly as
 * `prepareMatvec` (same arguments; `threadsPerRow` is not used), for any m: the prefill
 * product. `k` must be a multiple of the block size.
 */
export async function prepareTiledGemm(
  device: GPUDevice,
  a: TiledGemmArgs,
  label = "gemm",
): Promise<KernelDispatch> {
  const what = "gemm";
  const { f, y0, ldy, epilogue, flags, scale } = checkProduct(device, what, a);
  const swiglu = isGated(epilogue);
  const tile = a.tile ??
    (kernelPaths(device).gemmTile === "rows" ? GEMM_CPU_TILE : GEMM_GPU_TILE);
  const max = device.limits.maxComputeWorkgroupsPerDimension;
  let constants: Record<string, number>;
  let workgroups: [number, number];
  if (tile.kind === "rows") {
    const ok = [tile.threads, tile.rpt, tile.rb].every(Number.isInteger) && tile.threads >= 1 &&
      tile.threads <= device.limits.maxComputeInvocationsPerWorkgroup && tile.rpt >= 1 &&
      tile.rpt <= 8 && tile.rb >= 1 && tile.rb <= 32;
    if (!ok) fail(what, `bad tile ${JSON.stringify(tile)}`);
    constants = { WG_N: 1, WG_M: tile.threads, RPT: tile.rpt, RB: tile.rb };
    workgroups = [Math.ceil(a.n / (tile.threads * tile.rpt)), Math.ceil(a.m / tile.rb)];
  } else {
    const t = fitGemmTile(device, f, tile, swiglu);
    constants = { WG_N: t.wgN, WG_M: t.wgM, TN: t.tn, TM: t.tm, BK: t.bk, PAD: t.pad };
    workgroups = [Math.ceil(a.n / (t.tn * t.wgN)), Math.ceil(a.m / (t.tm * t.wgM))];
  }
  if (workgroups[0] > max || workgroups[1] > max) {
    fail(what, `${workgroups.join("×")} workgroups exceed the limit ${max}`);
  }
  return await prepareKernel(device, {
    label,
    shader: shaderVariant("product/gemm", { format: f.fragment }),
    entry: tile.kind === "rows" ? "rows" : "main",
    constants: { ...constants, ...epilogueConstants(epilogue) },
    uniform: productUniform(a, { ldy, y0, flags, scale }),
    floats: PRODUCT_UNIFORM_FLOATS,
    buffers: await productBindings(device, a, f),
    workgroups,
  });
}
