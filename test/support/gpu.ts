/**
 * GPU helpers for tests: one shared device per test process, and a wrapper that fails the
 * test on any WebGPU validation or out-of-memory error raised inside it.
 */
import { acquireGpu, type Gpu } from "../../src/gpu/device.ts";
import type { PathKind } from "../../src/gpu/paths.ts";

let shared: Promise<Gpu> | undefined;
const others = new Map<PathKind, Promise<Gpu>>();

/**
 * The test process's device (real GPU, lavapipe or llvmpipe), whose kernel paths are its
 * adapter's default; given `paths`, a device that takes those (that one when its default
 * agrees, else a second device: `gpu` runs a GPU's kernels on a CPU adapter; see
 * `src/gpu/paths.ts`).
 */
export async function testGpu(paths?: PathKind): Promise<Gpu> {
  const gpu = await (shared ??= acquireGpu({ label: "kiln-test" }));
  if (paths === undefined || gpu.caps.paths === paths) return gpu;
  let other = others.get(paths);
  if (other === undefined) {
    others.set(paths, other = acquireGpu({ label: `kiln-test:${paths}-paths`, paths }));
  }
  return await other;
}

/** Run `fn` inside validation and out-of-memory error scopes; throw if either caught one. */
export async function withErrorScopes<T>(device: GPUDevice, fn: () => Promise<T>): Promise<T> {
  device.pushErrorScope("validation");
  device.pushErrorScope("out-of-memory");
  let result: T | undefined;
  let thrown: unknown;
  try {
    result = await fn();
  } catch (e) {
    thrown = e;
  }
  const oom = await device.popErrorScope();
  const validation = await device.popErrorScope();
  const err = validation ?? oom;
  if (err) throw new Error(`WebGPU error: ${err.message}`, { cause: thrown });
  if (thrown !== undefined) throw thrown;
  return result as T;
}

/** `KILN_TOL_REPORT=1`: {@linkcode assertClose} prints how much of each bound it used. */
const REPORT = (globalThis as { Deno?: { env: { get(k: string): string | undefined } } }).Deno
  ?.env.get("KILN_TOL_REPORT") === "1";

/** f32's unit roundoff, 2^-24: the relative error of one rounding. */
export const F32_U = 2 ** -24;

/**
 * max |a-b| must stay within tol + |ref|*eps elementwise. With `KILN_TOL_REPORT=1` (Deno), each
 * call prints its largest error, largest |ref| and the largest fraction of the bound used.
 */
export function assertClose(
  actual: ArrayLike<number>,
  reference: ArrayLike<number>,
  tol: number,
  eps: number,
  what = "values",
): void {
  if (actual.length !== reference.length) {
    throw new Error(`${what}: length ${actual.length} != reference ${reference.length}`);
  }
  let worst = 0, worstErr = 0, refMax = 0;
  let failure: string | undefined;
  for (let i = 0; i < reference.length; i++) {
    const a = actual[i]!, r = reference[i]!;
    const bound = tol + Math.abs(r) * eps;
    const err = Math.abs(a - r);
    if (!(err <= bound)) {
      failure ??= `${what}[${i}]: got ${a}, reference ${r}, |err| ${err} > ${bound}`;
      if (!REPORT) break;
    }
    worstErr = Math.max(worstErr, err);
    refMax = Math.max(refMax, Math.abs(r));
    if (bound > 0) worst = Math.max(worst, err / bound);
  }
  if (REPORT) {
    console.log(
      `tol-report ${what}: max|err| ${worstErr.toExponential(2)} max|ref| ${
        refMax.toExponential(2)
      } bound used ${(100 * worst).toFixed(1)}% (tol ${tol.toExponential(2)}, eps ${
        eps.toExponential(2)
      })`,
    );
  }
  if (failure !== undefined) throw new Error(failure);
}

/** The largest fraction of `tol + |ref|·eps` an element's error takes (NaN counts as Infinity). */
export function boundUsed(
  actual: ArrayLike<number>,
  reference: ArrayLike<number>,
  tol: number,
  eps: number,
): number {
  let worst = 0;
  for (let i = 0; i < reference.length; i++) {
    const err = Math.abs(actual[i]! - reference[i]!);
    const used = err / (tol + Math.abs(reference[i]!) * eps);
    worst = Math.max(worst, Number.isNaN(used) ? Infinity : used);
  }
  return worst;
}

/** Root mean square of `values`: the typical magnitude of a kernel's outputs. */
export function rms(values: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < values.length; i++) s += values[i]! ** 2;
  return Math.sqrt(s / Math.max(1, values.length));
}

/**
 * The bound of f32 sums of `k` products against a float64 reference. Each addition rounds with
 * a relative error up to u = 2^-24 of a partial sum, and k of them add up like a random walk
 * (√k); the few roundings outside the sum (each product, a bias or residual add, the norm's
 * scale, SiLU) add a constant (4). The outputs' magnitude sets the scale: each output must stay
 * within `c·u·(√k + 4)·(rms(ref) + |ref|)`, that is `tol + |ref|·eps` with eps = c·u·(√k + 4)
 * and tol = eps·rms(ref). Tests choose `c` from their measured errors (`KILN_TOL_REPORT=1`).
 */
export function sumsTolerance(
  reference: ArrayLike<number>,
  k: number,
  c: number,
): { tol: number; eps: number } {
  const eps = c * F32_U * (Math.sqrt(k) + 4);
  return { tol: eps * rms(reference), eps };
}

/** {@linkcode assertClose} within {@linkcode sumsTolerance}. */
export function assertSumsClose(
  actual: ArrayLike<number>,
  reference: ArrayLike<number>,
  k: number,
  c: number,
  what = "values",
): void {
  const { tol, eps } = sumsTolerance(reference, k, c);
  assertClose(actual, reference, tol, eps, what);
}
