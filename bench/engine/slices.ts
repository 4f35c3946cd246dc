/**
 * Time per decoder layer from a shape benched at several depths (`bench --layers 1,4`): each
 * depth is the shape's first N layers with every width kept, so an engine's batch-1 decode step
 * is a fixed part (embedding, final norm, LM head, sampling, the step's overhead) plus N times a
 * layer. A least-squares line through (N, seconds per step) gives both; with two depths it is the
 * line through the two points. The full-depth figure is that line at the shape's own layer count:
 * an extrapolation, labelled as one, not a measurement.
 */
import { median } from "./compare.ts";
import type { EngineFit, ShapeResult, SliceFit } from "./report.ts";

const METHOD = "least-squares line through (layers, seconds per batch-1 decode step); " +
  "the full-depth figure is that line at the shape's layer count, an extrapolation";

/**
 * Batch-1 decode tokens/s per engine in one result: each timed peer's median over its rounds, and
 * Kiln's median over the same rounds (its own decode run when no peer was timed).
 */
export function batch1TokensPerS(r: ShapeResult): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of r.peers ?? []) {
    const d = p.decode?.find((d) => d.batch === 1);
    if (!d || d.tokens_per_s.length === 0) continue;
    out.set(p.name, median(d.tokens_per_s.map((x) => x.peer)));
    if (!out.has("kiln")) out.set("kiln", median(d.tokens_per_s.map((x) => x.kiln)));
  }
  const own = r.decode?.find((d) => d.batch === 1);
  if (!out.has("kiln") && own) out.set("kiln", own.tokens_per_s);
  return out;
}

/** Slope and intercept of the least-squares line through the points. */
export function fitLine(xs: readonly number[], ys: readonly number[]): [number, number] {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0, sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
  }
  const slope = sxy / sxx;
  return [slope, my - slope * mx];
}

/**
 * Per shape and weight type run at two or more depths: each engine timed at every one of them
 * gets its line (engines missing a depth are left out).
 */
export function perLayer(results: readonly ShapeResult[]): SliceFit[] {
  const groups = new Map<string, ShapeResult[]>();
  for (const r of results) {
    if (!r.slice || r.error) continue;
    const key = `${r.slice.shape}\u0000${r.slice.weights}`;
    (groups.get(key) ?? groups.set(key, []).get(key)!).push(r);
  }
  const out: SliceFit[] = [];
  for (const rs of groups.values()) {
    rs.sort((a, b) => a.slice!.layers - b.slice!.layers);
    const layers = rs.map((r) => r.slice!.layers);
    if (new Set(layers).size < 2) continue;
    const { shape, weights, of } = rs[0]!.slice!;
    const figures = rs.map(batch1TokensPerS);
    const engines: EngineFit[] = [];
    for (const name of figures[0]!.keys()) {
      if (!figures.every((f) => f.has(name))) continue;
      const step = figures.map((f) => 1 / f.get(name)!);
      const [slope, intercept] = fitLine(layers, step);
      const full = intercept + of * slope;
      engines.push({
        name,
        step_s: step,
        per_layer_s: slope,
        fixed_s: intercept,
        full_depth_tokens_per_s_estimate: slope > 0 && full > 0 ? 1 / full : null,
        ...(slope > 0 && full > 0 ? {} : {
          note: "the step time does not grow with depth here (the noise exceeds a layer's " +
            "cost): no per-layer or full-depth figure",
        }),
      });
    }
    out.push({ shape, weights, of, layers, engines, method: METHOD });
  }
  return out;
}
