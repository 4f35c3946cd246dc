/**
 * TEST ONLY: llama.cpp's CPU rounding of activations, for holding Kiln's float64 reference
 * against llama.cpp's logits on a quantized file. ggml's CPU product of a Q8_0, Q4_0, Q5_0 or
 * MXFP4 matrix
 * first quantizes its input to Q8_0 (the types' `vec_dot_type`): each block of 32 becomes
 * round(x / d) · d with d = max |x| / 127 stored as f16 (x read as f32). Products over F32
 * weights read their input as is. Other block types quantize theirs differently (Q8_1, Q8_K):
 * not modelled, so refused.
 */
import { EngineError } from "../contract/errors.ts";
import { f16ToNumber, numberToF16, type TensorDtype } from "../gpu/dtype.ts";
import type { LayerRole } from "../model/arch/mod.ts";
import type { ModelWeights, WeightInfo } from "../model/weights.ts";

/** The weight types whose products round their input to Q8_0 on llama.cpp's CPU. */
const Q8_0_INPUT: ReadonlySet<TensorDtype> = new Set(["Q8_0", "MXFP4", "Q4_0", "Q5_0"]);

/** `x` with each `32`-wide block of every `row`-wide row rounded as ggml's `quantize_row_q8_0`. */
export function roundQ8_0(x: Float64Array, row: number): Float64Array {
  if (row % 32 !== 0) {
    throw EngineError.invalidArgument(`Q8_0 rounding: rows of ${row} are not whole blocks of 32`);
  }
  const out = new Float64Array(x.length);
  for (let b = 0; b < x.length; b += 32) {
    let amax = 0;
    for (let i = b; i < b + 32; i++) amax = Math.max(amax, Math.abs(Math.fround(x[i]!)));
    const d = Math.fround(amax / 127), id = d === 0 ? 0 : Math.fround(1 / d);
    const stored = f16ToNumber(numberToF16(d));
    for (let i = b; i < b + 32; i++) {
      // C's roundf: halves away from zero (Math.round takes them up).
      const v = Math.fround(Math.fround(x[i]!) * id);
      out[i] = Math.sign(v) * Math.round(Math.abs(v)) * stored;
    }
  }
  return out;
}

/** Where a product's input is rounded: a layer role, each expert's gate/up or down, the head. */
export type RoundedInput = LayerRole | "expertsIn" | "expertsDown" | "lmHead";

/**
 * The products of `w` whose input llama.cpp rounds (the roles of Q8_0 and MXFP4 weights; a
 * stacked `qkv` or `gateUp` counts for its parts). Refuses weights of other block types.
 */
export function llamaCppRoundedInputs(w: ModelWeights<WeightInfo>): Set<RoundedInput> {
  const out = new Set<RoundedInput>();
  const take = (t: WeightInfo, ...roles: RoundedInput[]) => {
    if (Q8_0_INPUT.has(t.dtype)) roles.forEach((r) => out.add(r));
    else if (!["f32", "f16", "bf16"].includes(t.dtype)) {
      throw EngineError.invalidArgument(
        `tensor ${t.name}: llama.cpp's input rounding for ${t.dtype} is not modelled`,
      );
    }
  };
  take(w.lmHead, "lmHead");
  for (const { experts, ...l } of w.layers) {
    for (const [role, t] of Object.entries(l) as [LayerRole, WeightInfo][]) {
      if (role === "qkv") take(t, "q", "k", "v");
      else if (role === "gateUp") take(t, "gate", "up");
      else if (t.shape.length > 1) take(t, role);
    }
    for (const e of experts ?? []) {
      take(e.gate, "expertsIn");
      take(e.up, "expertsIn");
      take(e.down, "expertsDown");
    }
  }
  return out;
}
