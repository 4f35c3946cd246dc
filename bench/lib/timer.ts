/**
 * Seconds per dispatch, for kernel benchmarks: GPU timestamps around one compute pass where the
 * device has `timestamp-query`, the wall clock around submit-and-wait otherwise.
 */
import { readBuffer, storageBuffer } from "../../src/gpu/buffers.ts";
import type { Dispatch } from "../../src/gpu/dispatch.ts";

export interface DispatchTimer {
  /** Seconds per dispatch of `d`: the best of three passes of `count` dispatches, after a warm-up. */
  time(d: Dispatch, count: number): Promise<number>;
  kind: "timestamp" | "wall";
}

export function dispatchTimer(device: GPUDevice, timestamps: boolean): DispatchTimer {
  const query = timestamps
    ? device.createQuerySet({ label: "bench:ts", type: "timestamp", count: 2 })
    : undefined;
  const resolve = storageBuffer(device, "bench:ts_resolve", 16);
  const qbuf = device.createBuffer({
    label: "bench:ts_buf",
    size: 16,
    usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
  });
  const once = async (d: Dispatch, count: number) => {
    const enc = device.createCommandEncoder({ label: "bench" });
    const pass = enc.beginComputePass(
      query
        ? {
          label: "bench",
          timestampWrites: {
            querySet: query,
            beginningOfPassWriteIndex: 0,
            endOfPassWriteIndex: 1,
          },
        }
        : { label: "bench" },
    );
    pass.setPipeline(d.pipeline);
    pass.setBindGroup(0, d.bindGroup);
    const [gx, gy = 1, gz = 1] = d.workgroups;
    for (let i = 0; i < count; i++) pass.dispatchWorkgroups(gx, gy, gz);
    pass.end();
    if (query) {
      enc.resolveQuerySet(query, 0, 2, qbuf, 0);
      enc.copyBufferToBuffer(qbuf, 0, resolve, 0, 16);
    }
    const t0 = performance.now();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    const wall = (performance.now() - t0) / 1000;
    if (!query) return wall;
    const ts = new BigUint64Array(await readBuffer(device, resolve, 16));
    return Number(ts[1]! - ts[0]!) / 1e9;
  };
  return {
    kind: query ? "timestamp" : "wall",
    async time(d, count) {
      await once(d, count);
      const best = Math.min(await once(d, count), await once(d, count), await once(d, count));
      return best / count;
    },
  };
}
