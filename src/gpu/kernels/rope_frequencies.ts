/**
 * RoPE frequencies as `shaders/rope.wgsl` reads them: each inverse frequency (radians per
 * position) as turns per position, a 64-bit binary fraction in two u32 words (high, low), whole
 * turns dropped. The shader then reduces `position * frequency` modulo one turn with integer
 * products, exactly, where an f32 angle would err by half its ulp (3e-5 rad at position 1000,
 * 4e-3 rad at 100000).
 */
import { EngineError } from "../../contract/errors.ts";
import { uploadBuffer } from "../buffers.ts";

/**
 * `invFreq[i] / 2π` modulo 1 as words [high, low] per frequency: the fraction's bits 1-32 and
 * 33-64. Taken from a float64 division, so good to about 2^-54 turn.
 */
export function encodeRopeFrequencies(invFreq: ArrayLike<number>): Uint32Array {
  const out = new Uint32Array(2 * invFreq.length);
  for (let i = 0; i < invFreq.length; i++) {
    const f = invFreq[i]!;
    if (!(Number.isFinite(f) && f >= 0)) {
      throw EngineError.invalidArgument(
        `RoPE inverse frequency ${i} is ${f}: not a finite number >= 0`,
      );
    }
    const turns = f / (2 * Math.PI);
    const scaled = (turns - Math.floor(turns)) * 2 ** 32; // exact: a power-of-two scaling
    const high = Math.floor(scaled);
    out[2 * i] = high;
    out[2 * i + 1] = Math.floor((scaled - high) * 2 ** 32);
  }
  return out;
}

/** A storage buffer of `encodeRopeFrequencies(invFreq)`, for `prepareRope` and `prepareRopeKv`. */
export function uploadRopeFrequencies(
  device: GPUDevice,
  label: string,
  invFreq: ArrayLike<number>,
): GPUBuffer {
  return uploadBuffer(device, label, encodeRopeFrequencies(invFreq));
}
