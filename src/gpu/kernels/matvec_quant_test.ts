import { equal, ok } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { storageBuffer, uploadBuffer } from "../buffers.ts";
import { QUANT_FORMATS, QUANT_TYPES, quantize, type QuantType } from "../quant/formats.ts";
import { quantMatvecRef } from "../quant/reference.ts";
import { randomBlocks } from "../quant/random_blocks.ts";
import { prepareQuantMatvec } from "./matvec_quant.ts";
import { assertClose, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import {
  asF32,
  f32Buffer,
  outBuffer,
  runRead,
  seeded,
} from "../../../test/support/kernel_harness.ts";

const NS = [1, 7, 65, 577];
const MS = [1, 3, 8];
const KS = (t: QuantType) => QUANT_FORMATS[t].blockSize === 32 ? [32, 96, 576] : [256, 768, 1536];

function problem(type: QuantType, m: number, n: number, k: number, seed: number) {
  // Random well-formed blocks: every quant, scale and high bit of the layout matters.
  return { w: randomBlocks(type, n * k, seed), x: asF32(seeded(seed + 2, m * k)) };
}

/** f32 accumulation over k terms of magnitude ≤ 1. */
const tol = (k: number) => 4e-6 * k;

for (const type of QUANT_TYPES) {
  Deno.test(`matvec_quant ${type}: n 1/7/65/577 × k ${KS(type).join("/")}, m 1/3/8`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      let case_ = 0;
      for (const k of KS(type)) {
        for (const n of NS) {
          // Every (k, m) and (n, m) pair appears; the full product would be slow on lavapipe.
          const m = MS[case_++ % MS.length]!;
          const { w, x } = problem(type, m, n, k, 100 + case_);
          const y = outBuffer(device, "mvq:y", m * n);
          const d = await prepareQuantMatvec(device, {
            x: f32Buffer(device, "mvq:x", x),
            w: uploadBuffer(device, "mvq:w", w),
            y,
            m,
            n,
            k,
            type,
          });
          const got = await runRead(device, [d], y, m * n);
          assertClose(
            got,
            quantMatvecRef(type, w, x, m, n, k),
            tol(k),
            1e-5,
            `${type} m${m} n${n} k${k}`,
          );
        }
      }
    });
  });

  Deno.test(`matvec_quant ${type}: bias and accumulate, and m = 11 over two row slices`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      const k = KS(type)[1]!;
      for (
        const [m, n, withBias, accumulate] of [[3, 65, true, true], [11, 7, false, true], [
          11,
          33,
          true,
          false,
        ]] as const
      ) {
        // The quantizer's own blocks, end to end.
        const w = quantize(type, Float32Array.from(seeded(7 * m + n, n * k)), n, k);
        const x = asF32(seeded(m, m * k));
        const b = asF32(seeded(n, n));
        const y0 = asF32(seeded(m + 3, m * n));
        const y = f32Buffer(device, "mvq:y", y0);
        const d = await prepareQuantMatvec(device, {
          x: f32Buffer(device, "mvq:x", x),
          w: uploadBuffer(device, "mvq:w", w),
          y,
          m,
          n,
          k,
          type,
          ...(withBias ? { bias: f32Buffer(device, "mvq:b", b) } : {}),
          accumulate,
        });
        const got = await runRead(device, [d], y, m * n);
        const ref = quantMatvecRef(
          type,
          w,
          x,
          m,
          n,
          k,
          withBias ? b : undefined,
          accumulate ? y0 : undefined,
        );
        assertClose(
          got,
          ref,
          tol(k),
          1e-5,
          `${type} m${m} n${n} bias ${withBias} acc ${accumulate}`,
        );
      }
    });
  });
}

async function rejectsInvalid(p: Promise<unknown>, includes: string): Promise<void> {
  try {
    await p;
  } catch (e) {
    ok(e instanceof EngineError, String(e));
    equal(e.type, "InvalidArgument");
    ok(e.message.includes(includes), e.message);
    return;
  }
  throw new Error(`no error (expected one mentioning ${includes})`);
}

Deno.test("matvec_quant refuses k that is not whole blocks, unknown types and short buffers", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const buf = storageBuffer(device, "mvq:any", 1 << 16);
    const small = storageBuffer(device, "mvq:small", 64);
    const args = { x: buf, w: buf, y: buf, m: 1, n: 4, k: 576 };
    await rejectsInvalid(prepareQuantMatvec(device, { ...args, type: "Q4_K" }), "row length 576");
    await rejectsInvalid(prepareQuantMatvec(device, { ...args, type: "Q6_K" }), "row length 576");
    await rejectsInvalid(
      prepareQuantMatvec(device, { ...args, k: 40, type: "Q8_0" }),
      "row length 40",
    );
    await rejectsInvalid(
      prepareQuantMatvec(device, { ...args, type: "Q2_K" as QuantType }),
      "unknown quantization type",
    );
    await rejectsInvalid(prepareQuantMatvec(device, { ...args, m: 0, type: "Q8_0" }), "m must be");
    await rejectsInvalid(
      prepareQuantMatvec(device, { ...args, w: small, type: "Q8_0" }),
      "w holds 64",
    );
    await rejectsInvalid(
      prepareQuantMatvec(device, { ...args, bias: small, n: 32, type: "Q4_0" }),
      "bias holds 64",
    );
  });
});
