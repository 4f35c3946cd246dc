/**
 * Wrapper for `shaders/logits.wgsl`: one row of another runtime's logits (f32 or f16, in a
 * buffer Kiln does not own and that changes every step) into a row of an f32 buffer of Kiln's.
 */
import { createTrackedBuffer } from "../memory_ledger.ts";
import { UNIFORM } from "../buffers.ts";
import { computePipeline } from "../shader.ts";
import { grid256 } from "./kernel.ts";

export interface CopyRowArgs {
  /** The source buffer (bound whole, read as u32 words). */
  src: GPUBuffer;
  /** Its element type. */
  srcDtype: "f32" | "f16";
  /** First source element. */
  srcOffset: number;
  /** The destination f32 buffer and its first element. */
  dst: GPUBuffer;
  dstOffset: number;
  /** Elements to copy. */
  count: number;
}

/** Records row copies; keeps one uniform buffer per copy slot, reused across steps. */
export class RowCopier {
  readonly #uniforms: GPUBuffer[] = [];

  constructor(readonly device: GPUDevice, readonly label = "logits:copy_row") {}

  /**
   * Record copy `slot` (each slot owns a uniform buffer, written now with `queue.writeBuffer`:
   * use distinct slots for copies recorded into the same submission).
   */
  async encode(encoder: GPUCommandEncoder, a: CopyRowArgs, slot = 0): Promise<void> {
    const d = this.device;
    const f16 = a.srcDtype === "f16";
    const pipeline = await computePipeline(d, "logits", "copy_row", { SRC_F16: f16 ? 1 : 0 });
    while (this.#uniforms.length <= slot) {
      this.#uniforms.push(createTrackedBuffer(d, {
        label: `${this.label}:params:${this.#uniforms.length}`,
        size: 16,
        usage: UNIFORM,
      }, "other"));
    }
    const uniform = this.#uniforms[slot]!;
    d.queue.writeBuffer(uniform, 0, Uint32Array.from([a.count, a.srcOffset, a.dstOffset, 0]));
    const bindGroup = d.createBindGroup({
      label: `${this.label}:bind`,
      layout: pipeline.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: uniform } },
        { binding: 1, resource: { buffer: a.src } },
        { binding: 2, resource: { buffer: a.dst } },
      ],
    });
    const pass = encoder.beginComputePass({ label: this.label });
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    const [x, y] = grid256(d, a.count);
    pass.dispatchWorkgroups(x, y);
    pass.end();
  }

  /** Compile the copy's pipelines (f32 and f16 sources) before the first `encode`. */
  async warm(): Promise<void> {
    await Promise.all(
      [0, 1].map((f) => computePipeline(this.device, "logits", "copy_row", { SRC_F16: f })),
    );
  }

  destroy(): void {
    for (const u of this.#uniforms) u.destroy();
    this.#uniforms.length = 0;
  }
}
