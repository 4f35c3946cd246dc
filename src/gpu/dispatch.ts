/**
 * A prepared kernel launch: pipeline, bind group and workgroup counts. Kernel modules under
 * `src/gpu/kernels/` build these once for a set of buffers; callers record many into one pass.
 */
export interface Dispatch {
  /** Label of the dispatch, for errors and profiles. */
  label: string;
  /** The compute pipeline to run. */
  pipeline: GPUComputePipeline;
  /** Bind group 0. */
  bindGroup: GPUBindGroup;
  /** Workgroup counts in x, y, z (y and z default to 1). */
  workgroups: readonly [number, number?, number?];
}

/** Record `dispatches` in order into one compute pass of `encoder`. */
export function encodeDispatches(
  encoder: GPUCommandEncoder,
  dispatches: readonly Dispatch[],
  label = "kiln:pass",
): void {
  const pass = encoder.beginComputePass({ label });
  for (const d of dispatches) {
    pass.setPipeline(d.pipeline);
    pass.setBindGroup(0, d.bindGroup);
    const [x, y = 1, z = 1] = d.workgroups;
    pass.dispatchWorkgroups(x, y, z);
  }
  pass.end();
}

/** Record and submit `dispatches` as one command buffer. */
export function submitDispatches(
  device: GPUDevice,
  dispatches: readonly Dispatch[],
  label: string,
): void {
  const encoder = device.createCommandEncoder({ label });
  encodeDispatches(encoder, dispatches, label);
  device.queue.submit([encoder.finish()]);
}

/** Split a 1-D workgroup count over x and y so neither exceeds the device's per-dimension limit. */
export function grid(device: GPUDevice, count: number): readonly [number, number] {
  const max = device.limits.maxComputeWorkgroupsPerDimension;
  if (count <= max) return [Math.max(1, count), 1];
  const y = Math.ceil(count / max);
  return [Math.ceil(count / y), y];
}
