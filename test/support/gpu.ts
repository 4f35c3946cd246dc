/**
 * GPU helpers for tests: one shared device per test process, and a wrapper that fails the
 * test on any WebGPU validation or out-of-memory error raised inside it.
 */
import { acquireGpu, type Gpu } from "../../src/gpu/device.ts";

let shared: Promise<Gpu> | undefined;

/** The test process's device (real GPU, lavapipe or llvmpipe). */
export function testGpu(): Promise<Gpu> {
  return shared ??= acquireGpu({ label: "kiln-test" });
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

/** max |a-b| must stay within tol + |ref|*eps elementwise; returns the worst excess. */
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
  for (let i = 0; i < reference.length; i++) {
    const a = actual[i]!, r = reference[i]!;
    const bound = tol + Math.abs(r) * eps;
    if (!(Math.abs(a - r) <= bound)) {
      throw new Error(
        `${what}[${i}]: got ${a}, reference ${r}, |err| ${Math.abs(a - r)} > ${bound}`,
      );
    }
  }
}
