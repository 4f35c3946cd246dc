/**
 * Prefill FLOP/s beside the FMA probe (`probe.ts`), issue 25's "prefill GEMM vs FMA probe"
 * figure. A prompt token costs 2 FLOPs per weight of the decoder layers' matrices (the products;
 * the embedding is a lookup and the LM head runs for the last token only); attention's own
 * FLOPs are left out, so the fraction is a lower bound that a long prompt understates most.
 * Mixture-of-experts shapes are left out: their active FLOPs depend on the routing.
 *
 * @module
 */
import type { ModelConfig } from "../../src/model/config.ts";
import { archOf, layerTensors } from "../../src/model/arch/mod.ts";
import type { FmaProbeResult } from "../probes/probe.ts";
import type { PrefillResult } from "./report.ts";

/** FLOPs of one prompt token in the decoder layers' products, or undefined for an MoE model. */
export function prefillFlopsPerToken(c: ModelConfig): number | undefined {
  if (c.moe) return undefined;
  const a = archOf(c);
  let weights = 0;
  for (let l = 0; l < c.numLayers; l++) {
    for (const t of layerTensors(a, c, l)) {
      if (t.shape.length === 2) weights += t.shape[0]! * t.shape[1]!;
    }
  }
  return 2 * weights;
}

/** `row` with its GFLOP/s and their fraction of the FMA probe's (unchanged without a count). */
export function withFlops(
  row: PrefillResult,
  flopsPerToken: number | undefined,
  fma: FmaProbeResult,
): PrefillResult {
  if (flopsPerToken === undefined) return row;
  const gflop = (flopsPerToken * row.tokens_per_s) / 1e9;
  return { ...row, gflop_per_s: gflop, fraction_of_fma: gflop / fma.gflop_per_s };
}
