import assert from "node:assert/strict";
import { readU32 } from "../buffers.ts";
import { submitDispatches } from "../dispatch.ts";
import { appendRef, gatherRef } from "../../reference/kernels/tokens.ts";
import { prepareAppend, prepareGather } from "./tokens.ts";
import { testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import { outBuffer, seeded, u32Buffer } from "../../../test/support/kernel_harness.ts";

const ints = (seed: number, n: number, below: number) =>
  Array.from(seeded(seed, n), (v) => Math.floor((v + 1) / 2 * below));

for (const [storeLen, count] of [[1, 1], [97, 13], [1000, 65], [300, 200]] as const) {
  Deno.test(`tokens: gather ${count} ids from a store of ${storeLen}, one index outside`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      const store = ints(1 + storeLen, storeLen, 50_000);
      const index = ints(2 + count, count, storeLen);
      index[count - 1] = storeLen + 3; // outside: an id no vocabulary has
      const ids = outBuffer(device, "gather:ids", count);
      const d = await prepareGather(device, {
        store: u32Buffer(device, "gather:store", store),
        index: u32Buffer(device, "gather:index", index),
        ids,
        count,
      });
      submitDispatches(device, [d], "test");
      assert.deepEqual(await readU32(device, ids, count), gatherRef(store, index));
    });
  });

  Deno.test(`tokens: append ${count} sampled tokens into a store of ${storeLen}`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      const store = ints(3 + storeLen, storeLen, 50_000);
      const result = ints(4 + count, 2 * count, 2 ** 31);
      // Distinct targets (a real step appends one token per sequence), some skipped.
      const at = Array.from(
        { length: count },
        (_, s) => s % 5 === 4 ? 0xffffffff : (s * 7919) % storeLen,
      );
      const seen = new Set<number>();
      at.forEach((a, s) => {
        if (a === 0xffffffff) return;
        if (seen.has(a)) at[s] = 0xffffffff;
        seen.add(a);
      });
      const buf = u32Buffer(device, "append:store", store);
      const d = await prepareAppend(device, {
        result: u32Buffer(device, "append:result", result),
        at: u32Buffer(device, "append:at", at),
        store: buf,
        count,
      });
      submitDispatches(device, [d], "test");
      const want = appendRef(store, result, at);
      assert.deepEqual(await readU32(device, buf, storeLen), want);
      if (count > 1) assert.notDeepEqual(want, Uint32Array.from(store)); // the check can fail
    });
  });
}
