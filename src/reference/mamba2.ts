/**
 * The float64 Mamba2 layer (`mamba2` step) for `layer.ts`'s interpreter, written from the math
 * of llama.cpp's `build_mamba2_layer` and ggml's `ssm_conv` / `ssm_scan`: the input projection
 * z | x B C | dt of the normed rows, the causal convolution of x B C with its bias and SiLU, the
 * selective scan (softplus time step, exp(dt·A) decay, B and C per group), the D skip, the SiLU
 * gate and the RMSNorm per group, and the output projection. The state carries across calls.
 */
import { EngineError } from "../contract/errors.ts";
import type { ModelConfig } from "../model/config.ts";
import { ssmWidths } from "../model/ssm_config.ts";
import {
  causalConv,
  need,
  product,
  type ProductInput,
  type RecurrentState,
  type RecurrentWeights,
  silu,
  softplus,
} from "./recurrent.ts";

/** The convolution of x B C over the state and this run, biased, through SiLU ([T, conv]). */
function conv(
  c: ModelConfig,
  w: RecurrentWeights,
  zxbcdt: Float64Array,
  T: number,
  st: RecurrentState,
) {
  const { in: D, conv: C } = ssmWidths(c.ssm!), inner = c.ssm!.inner;
  const rows = new Float64Array(T * C);
  for (let t = 0; t < T; t++) rows.set(zxbcdt.subarray(t * D + inner, t * D + inner + C), t * C);
  const bias = need(w, "ssmConvBias");
  return causalConv(need(w, "ssmConv"), c.convWidth!, rows, T, C, st, bias).map(silu);
}

/** The scan, the D skip, the gate and the grouped norm: [T, inner]. */
function scan(
  c: ModelConfig,
  w: RecurrentWeights,
  zxbcdt: Float64Array,
  xbc: Float64Array,
  T: number,
  st: RecurrentState,
) {
  const s = c.ssm!, { in: D, conv: C } = ssmWidths(s), N = s.state, hd = s.inner / s.heads;
  const A = need(w, "ssmA"), dtBias = need(w, "ssmDtBias"), Dskip = need(w, "ssmD");
  const y = new Float64Array(T * s.inner);
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < s.heads; h++) {
      const g = Math.floor(h / (s.heads / s.groups));
      const dt = softplus(zxbcdt[t * D + s.inner + C + h]! + dtBias[h]!);
      const dA = Math.exp(dt * A[h]!);
      for (let p = 0; p < hd; p++) {
        const ch = h * hd + p, xv = xbc[t * C + ch]!;
        let acc = 0;
        for (let n = 0; n < N; n++) {
          const i = ch * N + n;
          const b = xbc[t * C + s.inner + g * N + n]!,
            cc = xbc[t * C + s.inner + s.groups * N + g * N + n]!;
          st.ssm[i] = st.ssm[i]! * dA + b * xv * dt;
          acc += cc * st.ssm[i]!;
        }
        const z = zxbcdt[t * D + ch]!;
        y[t * s.inner + ch] = (acc + xv * Dskip[h]!) * silu(z);
      }
    }
  }
  return y;
}

/** RMSNorm of each group of `inner / groups` values, weights `ssmNorm` (flattened). */
function groupNorm(c: ModelConfig, w: RecurrentWeights, y: Float64Array, T: number) {
  const s = c.ssm!, gw = s.inner / s.groups, weight = need(w, "ssmNorm");
  for (let r = 0; r < T * s.groups; r++) {
    let ss = 0;
    for (let i = 0; i < gw; i++) ss += y[r * gw + i]! ** 2;
    const scale = 1 / Math.sqrt(ss / gw + c.rmsNormEps);
    const g = r % s.groups;
    for (let i = 0; i < gw; i++) y[r * gw + i] = weight[g * gw + i]! * y[r * gw + i]! * scale;
  }
}

/** The Mamba2 branch of `T` normed rows `xn` ([T, hidden]) continuing `st`: [T, hidden]. */
export function mamba2Ref(
  c: ModelConfig,
  w: RecurrentWeights,
  xn: Float64Array,
  T: number,
  st: RecurrentState,
  round: ProductInput = (_role, v) => v,
): Float64Array {
  if (c.ssm === undefined || c.convWidth === undefined) {
    throw EngineError.invalidArgument("reference model: a mamba2 step without ssm sizes");
  }
  const H = c.hiddenSize, { in: D } = ssmWidths(c.ssm);
  const zxbcdt = product(round("ssmIn", xn, H), T, need(w, "ssmIn"), D, H);
  const xbc = conv(c, w, zxbcdt, T, st);
  const y = scan(c, w, zxbcdt, xbc, T, st);
  groupNorm(c, w, y, T);
  return product(round("ssmOut", y, c.ssm.inner), T, need(w, "ssmOut"), H, c.ssm.inner);
}
