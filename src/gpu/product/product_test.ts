/**
 * `prepareProduct` refuses a shape without rows, columns or inner dimension before choosing a
 * kernel, with the same InvalidArgument for float, quantized and split weights: an LM head over
 * m = 0 rows (a prompt chunk that asks for no logits) once compiled an empty float kernel and
 * failed quantized ones deep in `product/matvec`.
 */
import { ok, rejects } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { storageBuffer } from "../buffers.ts";
import type { TensorDtype } from "../dtype.ts";
import { quantizedRowBytes } from "../formats/registry.ts";
import { type GpuWeight, prepareProduct } from "./product.ts";
import { testGpu, withErrorScopes } from "../../../test/support/gpu.ts";

const N = 8, K = 64, M = 3;

function weight(device: GPUDevice, dtypes: TensorDtype[]): GpuWeight {
  const rows = N / dtypes.length;
  return {
    parts: dtypes.map((dtype) => ({
      dtype,
      rows,
      buffer: storageBuffer(
        device,
        `product_test:w:${dtype}`,
        rows * (dtype === "f32" ? 4 * K : quantizedRowBytes(dtype, K)),
      ),
    })),
  };
}

Deno.test("prepareProduct: m, n or k not an integer >= 1 is an InvalidArgument for float, quantized and split weights", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const buf = (label: string, floats: number) => storageBuffer(device, label, 4 * floats);
    const scratch = {
      normed: buf("product_test:normed", M * K),
      product: buf("product_test:product", 2 * M * N),
    };
    const base = {
      x: buf("product_test:x", M * K),
      y: buf("product_test:y", M * N),
      m: M,
      n: N,
      k: K,
    };
    const bad: ["m" | "n" | "k", number][] = [["m", 0], ["m", -1], ["m", 1.5], ["n", 0], ["k", 0]];
    for (const dtypes of [["f32"], ["Q8_0"], ["Q8_0", "f32"]] as TensorDtype[][]) {
      const w = weight(device, dtypes);
      const label = `product ${dtypes.join("+")}`;
      // The same shape with its counts is accepted: the refusals below are about them alone.
      const ran = await prepareProduct(device, { ...base, weight: w }, scratch, label);
      ok(ran.length >= dtypes.length, `${label}: a dispatch per part`);
      for (const [name, value] of bad) {
        await rejects(
          prepareProduct(device, { ...base, weight: w, [name]: value }, scratch, label),
          (e: unknown) =>
            e instanceof EngineError && e.type === "InvalidArgument" &&
            e.message === `${label}: ${name} must be an integer >= 1, got ${value}`,
          `${label}: ${name} = ${value}`,
        );
      }
    }
  });
});
