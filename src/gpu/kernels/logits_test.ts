import { uploadBuffer } from "../buffers.ts";
import { readF32, storageBuffer } from "../buffers.ts";
import { numberToF16 } from "../dtype.ts";
import { copyRowRef } from "../../reference/kernels/logits.ts";
import { assertClose, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import { seeded } from "../../../test/support/kernel_harness.ts";
import { RowCopier } from "./logits.ts";

Deno.test("copy_row: a row of f32 or f16 logits at odd offsets into an f32 row, as the reference", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const copier = new RowCopier(device);
    for (const dtype of ["f32", "f16"] as const) {
      for (
        const [vocab, rows, row, dstOffset] of [[1, 1, 0, 0], [257, 3, 2, 7], [
          5001,
          2,
          1,
          3,
        ]] as const
      ) {
        const values = seeded(vocab * 31 + rows, vocab * rows, 20);
        const src = dtype === "f32"
          ? Float32Array.from(values)
          : Uint16Array.from(values, numberToF16);
        const srcBuf = uploadBuffer(device, "copy_row:src", src);
        const dst = storageBuffer(device, "copy_row:dst", (dstOffset + vocab + 1) * 4);
        const encoder = device.createCommandEncoder({ label: "copy_row:test" });
        await copier.encode(encoder, {
          src: srcBuf,
          srcDtype: dtype,
          srcOffset: row * vocab,
          dst,
          dstOffset,
          count: vocab,
        });
        device.queue.submit([encoder.finish()]);
        const got = await readF32(device, dst);
        const ref = copyRowRef(src, row * vocab, vocab);
        // Exact: a copy (f16 widening is exact in f32).
        assertClose(got.subarray(dstOffset, dstOffset + vocab), ref, 0, 0, `${dtype} ${vocab}`);
        assertClose([got[dstOffset + vocab]!], [0], 0, 0, "past the row");
        if (dstOffset > 0) {
          assertClose(
            got.subarray(0, dstOffset),
            new Array(dstOffset).fill(0),
            0,
            0,
            "before the row",
          );
        }
        srcBuf.destroy();
        dst.destroy();
      }
    }
    copier.destroy();
  });
});
