/**
 * Deterministic random F16 weights for a HF config: the tensor list a checkpoint of its family
 * holds (names and shapes from the family's description in `src/model/arch/`) and a fast seeded generator
 * that fills each tensor independently of the others (a tensor's bytes depend only on the seed
 * and its name), so a checkpoint can be streamed to disk one chunk at a time.
 *
 * Values: weights N(0, 0.02²), biases N(0, 0.01²), norms exactly 1. Each 16-bit draw indexes a
 * table of 65,536 normal quantiles (computed here by integrating the density), so a 32-bit
 * draw yields two values and the output is the same on every machine.
 */
import type { ModelConfig } from "../../src/model/config.ts";
import {
  archOf,
  expertTensors,
  globalTensors,
  layerTensors,
  type ResolvedTensor,
} from "../../src/model/arch/mod.ts";
import { dimSize } from "../../src/model/arch/names.ts";
import { numberToF16 } from "../../src/gpu/dtype.ts";

/** Bumped whenever the bytes this module produces for a given config change. */
export const GENERATOR = "kiln-bench-weights/1";

export type Fill = { kind: "normal"; std: number } | { kind: "const"; value: number };

export interface TensorSpec {
  name: string;
  shape: number[];
  fill: Fill;
}

const WEIGHT: Fill = { kind: "normal", std: 0.02 };
const BIAS: Fill = { kind: "normal", std: 0.01 };
const ONES: Fill = { kind: "const", value: 1 };

/** Norms ones, biases small, every matrix (2 or more dimensions) the weight distribution. */
function fillOf(t: ResolvedTensor<string>): Fill {
  if (t.shape.length > 1) return WEIGHT;
  return t.entry.role.endsWith("Bias") ? BIAS : ONES;
}

/**
 * Every tensor of the checkpoint as its family's description lists them (`src/model/arch/`),
 * under HF names and HF shapes, in file order: the embedding, each layer's (only the tensors of
 * that layer's kind in a hybrid family; a mixture-of-experts layer's experts after its own
 * tensors, expert by expert), then the final norm and the LM head.
 */
export function tensorSpecs(c: ModelConfig): TensorSpec[] {
  const a = archOf(c);
  // HF's own shape where it differs (`hfShape`: a depthwise Conv1d's [channels, 1, taps]); a
  // tensor HF stores as one stack of row blocks (`hfRows`) is written once, at its whole shape.
  const hfDims = (t: ResolvedTensor<string>) => t.entry.hfRows?.of ?? t.entry.hfShape;
  const spec = (t: ResolvedTensor<string>): TensorSpec => ({
    name: t.hfStored ?? t.hf,
    shape: hfDims(t)?.map((d) => dimSize(c, d)) ?? t.shape,
    fill: fillOf(t),
  });
  const globals = globalTensors(a, c);
  const layers = Array.from(
    { length: c.numLayers },
    (_, l) => [...layerTensors(a, c, l), ...expertTensors(a, c, l)],
  ).flat();
  const all = [
    ...globals.filter((t) => t.entry.role === "embed").map(spec),
    ...layers.map(spec),
    ...globals.filter((t) => t.entry.role !== "embed").map(spec),
  ];
  return all.filter((t, i) => all.findIndex((u) => u.name === t.name) === i);
}

export const elements = (t: TensorSpec): number => t.shape.reduce((a, b) => a * b, 1);

/** FNV-1a over the UTF-16 code units of `s`: the per-tensor seed. */
export function hashSeed(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

let quantiles: Float64Array | undefined;

/**
 * The 65,536 standard-normal quantiles at (i + 0.5) / 65536: the CDF is the trapezoid-rule
 * integral of the density on a 1e-4 grid over [-7, 7], inverted by linear interpolation.
 */
export function normalQuantiles(): Float64Array {
  if (quantiles) return quantiles;
  const step = 1e-4, lo = -7, n = Math.round(14 / step);
  const pdf = (x: number) => Math.exp(-0.5 * x * x) / Math.sqrt(2 * Math.PI);
  const cdf = new Float64Array(n + 1);
  for (let i = 1; i <= n; i++) {
    cdf[i] = cdf[i - 1]! + 0.5 * step * (pdf(lo + (i - 1) * step) + pdf(lo + i * step));
  }
  const total = cdf[n]!;
  const out = new Float64Array(65536);
  let j = 0;
  for (let i = 0; i < 65536; i++) {
    const target = ((i + 0.5) / 65536) * total;
    while (cdf[j + 1]! < target) j++;
    const a = cdf[j]!, b = cdf[j + 1]!;
    out[i] = lo + (j + (target - a) / (b - a)) * step;
  }
  return (quantiles = out);
}

const tables = new Map<number, Uint16Array>();

/** F16 bits of `std` × each quantile. */
function f16Table(std: number): Uint16Array {
  let t = tables.get(std);
  if (!t) {
    const q = normalQuantiles();
    t = new Uint16Array(65536);
    for (let i = 0; i < 65536; i++) t[i] = numberToF16(std * q[i]!);
    tables.set(std, t);
  }
  return t;
}

/**
 * Fill a tensor's F16 values chunk by chunk: `next(out)` writes the following `out.length`
 * values (the sequence does not depend on how it is chunked, as long as chunks are even).
 */
export function tensorFiller(seed: string, t: TensorSpec): (out: Uint16Array) => void {
  const fill = t.fill;
  if (fill.kind === "const") {
    const bits = numberToF16(fill.value);
    return (out) => out.fill(bits);
  }
  const table = f16Table(fill.std);
  // A Weyl sequence through a murmur3-style finaliser: one 32-bit draw per two values.
  let state = hashSeed(`${seed}:${t.name}`);
  return (out) => {
    const n = out.length;
    let s = state;
    let i = 0;
    for (; i + 1 < n; i += 2) {
      s = (s + 0x9e3779b9) | 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      z ^= z >>> 16;
      out[i] = table[z & 0xffff]!;
      out[i + 1] = table[z >>> 16]!;
    }
    if (i < n) {
      s = (s + 0x9e3779b9) | 0;
      let z = Math.imul(s ^ (s >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      out[i] = table[(z ^ (z >>> 16)) & 0xffff]!;
    }
    state = s;
  };
}
