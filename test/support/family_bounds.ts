/**
 * How far Kiln may be from llama.cpp's logits on a model-family fixture
 * (`test/fixtures/families/<family>/`): bounds set from the error measured when the fixture was
 * written, with a documented margin, instead of one flat bound for every family.
 */
import { tolerance } from "../../src/reference/verify.ts";

/** What the tests read of a fixture's `manifest.json`. */
export interface FixtureManifest {
  tokens: number[];
  ablations: { feature: string; max_abs_delta: number }[];
  /** The largest |logit| of llama.cpp's. */
  logits: { shape: [number, number]; max_abs: number };
  /** An independent float64 forward of the HF folder against llama.cpp's logits, when written. */
  float64_reference?: { max_abs_error: number };
}

/**
 * Kiln's float64 reference may be this many times the fixture's measured error
 * (`float64_reference.max_abs_error`: an independent float64 forward of the HF folder against
 * llama.cpp's float32 logits, 3.7e-6 to 5.2e-5 outside Gemma) from llama.cpp's logits. Measured:
 * 1.00x on every HF folder and GGUF but llama3's GGUF (1.05x: its llama3 RoPE frequencies are
 * stored as f32 factors). An RMSNorm epsilon x10 moves the float64 logits 7.7e-6 (granite) to
 * 8.6e-4 (gpt-oss) from llama.cpp's: outside this bound on every family, inside the flat 1e-3
 * the tests used before on every one.
 */
export const REFERENCE_MARGIN = 1.5;

/**
 * The bounds against llama.cpp's logits of fixture `manifest`, never above `most`: `reference`
 * for the float64 pass (the measured error x {@linkcode REFERENCE_MARGIN}), `gpu` for the GPU
 * forward: `reference` plus verify's f32 bound at the largest logit (the GPU is held within that
 * of the reference on the same weights, so the two bounds together imply this one; measured on
 * llama3, cpu paths: 4.05e-5 against a bound of 3.1e-4).
 */
export function llamaCppBounds(
  manifest: FixtureManifest,
  most: number,
): { reference: number; gpu: number } {
  const measured = manifest.float64_reference?.max_abs_error;
  if (measured === undefined) return { reference: most, gpu: most };
  const reference = Math.min(most, measured * REFERENCE_MARGIN);
  const gpu = reference + tolerance("f32").maxAbs * Math.max(1, manifest.logits.max_abs);
  return { reference, gpu: Math.min(most, gpu) };
}
