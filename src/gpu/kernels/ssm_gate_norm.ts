/**
 * Wrapper for `shaders/ssm_gate_norm.wgsl`: Mamba2's output step after the selective scan, the D
 * skip, the SiLU gate and the grouped RMSNorm (llama.cpp's `build_mamba2_layer` after
 * `ggml_ssm_scan`). Per token t and channel c < inner = heads·headDim:
 *
 *   v[t, c]   = (y[t, c] + x[t, c]·D[c / headDim]) · silu(z[t, c])
 *   out[t, c] = w[c] · v[t, c] / sqrt(mean of v[t, ·]² over c's group + eps)
 *
 * with `groups` equal slices of the row (the group of c is c / (inner / groups)) and w the norm
 * weight flattened to [inner] (GGUF `ssm_norm` [groups, inner / groups]).
 */
import { checkBuffer, checkCount, fail, type KernelDispatch, prepareKernel } from "./kernel.ts";
import { checkStrided, type StridedF32 } from "./gated_delta_net.ts";
import { grid } from "../dispatch.ts";

export type { StridedF32 } from "./gated_delta_net.ts";

/**
 * The widest group the kernel takes: each of a workgroup's 64 threads walks a group twice, and
 * lavapipe ends an invocation's loops after 65535 iterations; 2·(65536 / 64) + 7 stays far under.
 */
export const SSM_NORM_MAX_GROUP = 65536;

/** Buffers and shape of {@linkcode prepareSsmGateNorm}. */
export interface SsmGateNormArgs {
  /** The scan's output [tokens, heads, headDim]. */
  y: StridedF32;
  /** The scan's input x [tokens, heads, headDim] (the conv output's x part). */
  x: StridedF32;
  /** The gate z [tokens, inner] (a slice of the in_proj row). */
  z: StridedF32;
  /** f32 [heads]: the D skip per head. */
  d: GPUBuffer;
  /** f32 [inner]: the norm weight. */
  weight: GPUBuffer;
  /** Out: f32 [tokens, inner], row stride inner; must not alias y, x or z. */
  out: GPUBuffer;
  /** Tokens in the step. */
  tokens: number;
  /** SSM heads. */
  heads: number;
  /** Channels per head. */
  headDim: number;
  /** Norm groups; divides inner = heads·headDim. */
  groups: number;
  /** Added to the mean square inside the square root. */
  eps: number;
}

/** Check every count, buffer and alias of `a`. */
function checkArgs(device: GPUDevice, what: string, a: SsmGateNormArgs): void {
  for (const n of ["tokens", "heads", "headDim", "groups"] as const) checkCount(what, n, a[n], 1);
  if (!Number.isFinite(a.eps) || a.eps < 0) {
    fail(what, `eps must be a finite number >= 0, got ${a.eps}`);
  }
  const inner = a.heads * a.headDim;
  if (inner % a.groups !== 0) {
    fail(what, `groups ${a.groups} do not divide inner ${inner} (heads·headDim)`);
  }
  if (inner / a.groups > SSM_NORM_MAX_GROUP) {
    fail(what, `group width ${inner / a.groups} is over ${SSM_NORM_MAX_GROUP}`);
  }
  for (const n of ["y", "x", "z"] as const) {
    checkStrided(device, what, n, a[n], inner, a.tokens);
    if (a[n].buffer === a.out) fail(what, `out must not alias ${n}`);
  }
  checkBuffer(device, what, "d", a.d, a.heads * 4);
  checkBuffer(device, what, "weight", a.weight, inner * 4);
  checkBuffer(device, what, "out", a.out, a.tokens * inner * 4);
}

/**
 * The gated, group-normed output of a Mamba2 layer's scan (see the module doc): one workgroup of
 * 64 threads per (token, group), `out` dense [tokens, inner].
 */
export async function prepareSsmGateNorm(
  device: GPUDevice,
  a: SsmGateNormArgs,
  label = "ssm_gate_norm",
): Promise<KernelDispatch> {
  checkArgs(device, label, a);
  const inner = a.heads * a.headDim;
  return await prepareKernel(device, {
    label,
    shader: "ssm_gate_norm",
    entry: "main",
    // deno-fmt-ignore
    uniform: [
      a.tokens, a.groups, a.headDim, inner / a.groups, inner, a.eps, 0, 0,
      a.y.stride, a.y.offset, a.x.stride, a.x.offset, a.z.stride, a.z.offset, 0, 0,
    ],
    floats: [5],
    buffers: { 1: a.y.buffer, 2: a.x.buffer, 3: a.z.buffer, 4: a.d, 5: a.weight, 6: a.out },
    workgroups: grid(device, a.tokens * a.groups),
  });
}
