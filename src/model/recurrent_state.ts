/**
 * How big one sequence's recurrent state is, per layer kind: a short convolution keeps its last
 * `convWidth - 1` inputs of every channel (the residual width); a Mamba2 layer keeps those of its
 * convolution's channels (inner + 2·groups·state) and the scan's state (inner·state values); a
 * gated delta net layer those of its q | k | v convolution and a [vDim, kDim] state per value head.
 * All f32. `GpuModel` allocates them per state slot; the engine's fit counts them.
 */
import type { DeltaConfig, LayerKind, SsmConfig } from "./arch/mod.ts";
import { layerKind } from "./layer_kinds.ts";

/** What the state sizes depend on. */
export interface StateConfig {
  numLayers: number;
  hiddenSize: number;
  layerKinds?: readonly LayerKind[];
  convWidth?: number;
  ssm?: SsmConfig;
  delta?: DeltaConfig;
}

/** One sequence's state in a layer of `kind`: convolution channels and SSM values (0 for none). */
export function stateShape(
  c: StateConfig,
  kind: LayerKind,
): { convRows: number; convChannels: number; ssmValues: number } {
  const convRows = (c.convWidth ?? 1) - 1;
  if (kind === "short_conv") return { convRows, convChannels: c.hiddenSize, ssmValues: 0 };
  if (kind === "mamba2" && c.ssm) {
    const s = c.ssm;
    return {
      convRows,
      convChannels: s.inner + 2 * s.groups * s.state,
      ssmValues: s.inner * s.state,
    };
  }
  if (kind === "delta_net" && c.delta) {
    const d = c.delta, inner = d.vHeads * d.vDim;
    return { convRows, convChannels: 2 * d.kHeads * d.kDim + inner, ssmValues: inner * d.kDim };
  }
  return { convRows: 0, convChannels: 0, ssmValues: 0 };
}

/** Bytes of one sequence's state in layer `l` of `c` (0 at an attention layer). */
export function layerStateBytes(c: StateConfig, l: number): number {
  const s = stateShape(c, layerKind(c, l));
  return (s.convRows * s.convChannels + s.ssmValues) * 4;
}

/** Bytes of one sequence's recurrent state over every layer of `c`. */
export function sequenceStateBytes(c: StateConfig): number {
  let n = 0;
  for (let l = 0; l < c.numLayers; l++) n += layerStateBytes(c, l);
  return n;
}
