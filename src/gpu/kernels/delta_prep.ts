/**
 * Wrappers for `shaders/delta_prep.wgsl`: the steps of a Qwen3.5 gated delta net layer around
 * the delta rule (`gated_delta_net.ts`), as llama.cpp's `build_layer_attn_linear` orders them.
 *
 * {@linkcode prepareDeltaPrep}, before the rule, per token t:
 *
 *   q and k heads of the conv row, in place:  x ← x / sqrt(Σ x² + eps)
 *   beta[t, h] = sigmoid(b[t, h])
 *   g[t, h]    = softplus(alpha[t, h] + dtBias[h]) · a[h]      (a = -exp(A_log))
 *
 * (the L2 norm of `build_gdn_l2_norm`, eps inside the root; softplus(s) = s past s > 20, ggml's
 * threshold). {@linkcode prepareNormGate}, after the rule: per token and value head,
 * out = RMSNorm(o, weight) ⊙ silu(z), the norm first, then the gate (`build_norm_gated`).
 */
import { checkBuffer, checkCount, fail, type KernelDispatch, prepareKernel } from "./kernel.ts";
import { checkStrided, type StridedF32 } from "./gated_delta_net.ts";
import { grid } from "../dispatch.ts";

export type { StridedF32 } from "./gated_delta_net.ts";

/**
 * The widest head either norm takes: a workgroup's 64 threads each walk a head twice and lavapipe
 * ends an invocation's loops after 65535 iterations; 2·(65536 / 64) + 7 stays far under.
 */
export const DELTA_PREP_MAX_DIM = 65536;

/** Threads per workgroup (the shader's `WG`). */
const WG = 64;

/** Buffers and shape of {@linkcode prepareDeltaPrep}. */
export interface DeltaPrepArgs {
  /**
   * The conv output rows [q (kHeads·kDim) | k (kHeads·kDim) | v ...]; q and k are normed in place
   * (the v part, past 2·kHeads·kDim, is neither read nor written).
   */
  conv: StridedF32;
  /** Rows [beta logits (vHeads) | alpha (vHeads)]; must not share conv's buffer. */
  ab: StridedF32;
  /** f32 [vHeads]: the dt bias added to alpha. */
  dtBias: GPUBuffer;
  /** f32 [vHeads]: -exp(A_log), the factor of softplus. */
  a: GPUBuffer;
  /** Out: f32 [tokens, vHeads], sigmoid(b). */
  beta: GPUBuffer;
  /** Out: f32 [tokens, vHeads], the log decay. */
  g: GPUBuffer;
  /** Tokens in the step. */
  tokens: number;
  /** Key (and query) heads. */
  kHeads: number;
  /** Key head dim. */
  kDim: number;
  /** Value heads. */
  vHeads: number;
  /** Added to each head's sum of squares inside the root (the model's RMS norm eps). */
  eps: number;
}

/** Buffers and shape of {@linkcode prepareNormGate}. */
export interface NormGateArgs {
  /** The delta rule's output [tokens, heads·headDim]. */
  o: StridedF32;
  /** The gate z [tokens, heads·headDim]. */
  z: StridedF32;
  /** f32 [headDim]: the norm weight, shared by every head. */
  weight: GPUBuffer;
  /** Out: f32 [tokens, heads·headDim], dense; must not share o's or z's buffer. */
  out: GPUBuffer;
  /** Tokens in the step. */
  tokens: number;
  /** Value heads. */
  heads: number;
  /** Value head dim. */
  headDim: number;
  /** Added to each head's mean square inside the root. */
  eps: number;
}

/** Refuse counts below 1, a head dim over the limit and a bad eps. */
function checkShape(what: string, a: Record<string, number>, dim: string): void {
  for (const [n, v] of Object.entries(a)) if (n !== "eps") checkCount(what, n, v, 1);
  if (a[dim]! > DELTA_PREP_MAX_DIM) {
    fail(what, `${dim} must be <= ${DELTA_PREP_MAX_DIM}, got ${a[dim]}`);
  }
  if (!Number.isFinite(a.eps) || a.eps! < 0) {
    fail(what, `eps must be a finite number >= 0, got ${a.eps}`);
  }
}

/** Refuse a written buffer (the first `written` of `named`) that shares any other's buffer. */
function checkApart(what: string, named: [string, GPUBuffer][], written: number): void {
  for (let i = 0; i < written; i++) {
    for (let j = i + 1; j < named.length; j++) {
      if (named[i]![1] === named[j]![1]) {
        fail(what, `${named[i]![0]} must not alias ${named[j]![0]}`);
      }
    }
  }
}

/** Check every count, buffer and alias of `a`. */
function checkPrep(device: GPUDevice, what: string, a: DeltaPrepArgs): void {
  const { tokens, kHeads, kDim, vHeads, eps } = a;
  checkShape(what, { tokens, kHeads, kDim, vHeads, eps }, "kDim");
  checkStrided(device, what, "conv", a.conv, 2 * kHeads * kDim, tokens);
  checkStrided(device, what, "ab", a.ab, 2 * vHeads, tokens);
  checkBuffer(device, what, "dtBias", a.dtBias, vHeads * 4);
  checkBuffer(device, what, "a", a.a, vHeads * 4);
  checkBuffer(device, what, "beta", a.beta, tokens * vHeads * 4);
  checkBuffer(device, what, "g", a.g, tokens * vHeads * 4);
  const named: [string, GPUBuffer][] = [
    ["conv", a.conv.buffer],
    ["beta", a.beta],
    ["g", a.g],
    ["ab", a.ab.buffer],
    ["dtBias", a.dtBias],
    ["a", a.a],
  ];
  checkApart(what, named, 3);
}

/**
 * Qwen3.5's preparation of the delta rule's inputs (see the module doc): the q and k heads of
 * `conv` L2-normed in place, `beta` and `g` written dense [tokens, vHeads]. One workgroup of 64
 * threads per (token, q or k head), then one thread per (token, value head).
 */
export async function prepareDeltaPrep(
  device: GPUDevice,
  a: DeltaPrepArgs,
  label = "delta_prep",
): Promise<KernelDispatch> {
  checkPrep(device, label, a);
  const normItems = a.tokens * 2 * a.kHeads;
  const gateItems = Math.ceil((a.tokens * a.vHeads) / WG);
  return await prepareKernel(device, {
    label,
    shader: "delta_prep",
    entry: "prep",
    // deno-fmt-ignore
    uniform: [
      a.tokens, a.kHeads, a.kDim, a.vHeads, a.conv.stride, a.conv.offset, a.ab.stride, a.ab.offset,
      normItems, a.eps, 0, 0,
    ],
    floats: [9],
    buffers: { 1: a.conv.buffer, 2: a.ab.buffer, 3: a.dtBias, 4: a.a, 5: a.beta, 6: a.g },
    workgroups: grid(device, normItems + gateItems),
  });
}

/**
 * Qwen3.5's gated output norm (see the module doc): one workgroup of 64 threads per (token,
 * head), `out` dense [tokens, heads·headDim].
 */
export async function prepareNormGate(
  device: GPUDevice,
  a: NormGateArgs,
  label = "norm_gate",
): Promise<KernelDispatch> {
  const { tokens, heads, headDim, eps } = a;
  checkShape(label, { tokens, heads, headDim, eps }, "headDim");
  const width = heads * headDim;
  checkStrided(device, label, "o", a.o, width, tokens);
  checkStrided(device, label, "z", a.z, width, tokens);
  checkBuffer(device, label, "weight", a.weight, headDim * 4);
  checkBuffer(device, label, "out", a.out, tokens * width * 4);
  checkApart(
    label,
    [["out", a.out], ["o", a.o.buffer], ["z", a.z.buffer], ["weight", a.weight]],
    1,
  );
  return await prepareKernel(device, {
    label,
    shader: "delta_prep",
    entry: "norm_gate",
    // deno-fmt-ignore
    uniform: [
      tokens, heads, headDim, 0, a.o.stride, a.o.offset, a.z.stride, a.z.offset,
      0, eps, 0, 0,
    ],
    floats: [9],
    buffers: { 7: a.o.buffer, 8: a.z.buffer, 9: a.weight, 10: a.out },
    workgroups: grid(device, tokens * heads),
  });
}
