import { deepStrictEqual as deepEqual, ok, strictEqual as equal } from "node:assert/strict";
import type { PeerReport } from "./peer_report.ts";
import { type BenchReport, formatTable, type ShapeResult } from "./report.ts";
import { batch1TokensPerS, fitLine, perLayer } from "./slices.ts";

const close = (a: number, b: number, what: string) =>
  ok(Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);

/** A result at `layers` of 48 whose engines take `fixed + layers × perLayer` seconds a step. */
function sliced(
  layers: number,
  engines: Record<string, [fixed: number, perLayer: number]>,
  weights = "q4_k_m",
): ShapeResult {
  const tps = (name: string) => 1 / (engines[name]![0] + layers * engines[name]![1]);
  const peers: PeerReport[] = Object.keys(engines).filter((n) => n !== "kiln").map((name) => ({
    name,
    status: "ok",
    decode: [{
      batch: 1,
      // Three rounds: the median is the middle one.
      tokens_per_s: [0.5, 1, 3].map((f) => ({
        kiln: tps("kiln") * f,
        peer: tps(name) * f,
      })),
      kiln_over_peer: tps("kiln") / tps(name),
    }],
  }));
  return {
    shape: `m-first${layers}-${weights}`,
    model_dir: "",
    slice: { shape: "m", layers, of: 48, weights },
    peers,
    skipped: [],
  };
}

Deno.test("the line through two or three depths recovers each engine's fixed and per-layer time", () => {
  const engines = { kiln: [0.2, 0.05], "llama.cpp": [1.5, 0.4] } as Record<
    string,
    [number, number]
  >;
  for (const depths of [[1, 4], [1, 2, 6]]) {
    const fits = perLayer(depths.map((n) => sliced(n, engines)));
    equal(fits.length, 1);
    const fit = fits[0]!;
    deepEqual([fit.shape, fit.weights, fit.of, fit.layers], ["m", "q4_k_m", 48, depths]);
    deepEqual(fit.engines.map((e) => e.name), ["llama.cpp", "kiln"]);
    for (const e of fit.engines) {
      const [fixed, per] = engines[e.name]!;
      close(e.per_layer_s, per, `${e.name} per layer`);
      close(e.fixed_s, fixed, `${e.name} fixed`);
      close(e.full_depth_tokens_per_s_estimate!, 1 / (fixed + 48 * per), `${e.name} estimate`);
      equal(e.note, undefined);
      deepEqual(e.step_s.length, depths.length);
    }
  }
});

Deno.test("one depth, another weight type, a failed run or an engine missing a depth gives no line", () => {
  const engines = { kiln: [0.2, 0.05], "llama.cpp": [1.5, 0.4] } as Record<
    string,
    [number, number]
  >;
  deepEqual(perLayer([sliced(1, engines)]), []);
  deepEqual(perLayer([sliced(1, engines), sliced(4, engines, "q8_0")]), []);
  deepEqual(perLayer([sliced(1, engines), { ...sliced(4, engines), error: "out of memory" }]), []);
  const partial = sliced(4, engines);
  partial.peers = [];
  partial.decode = [{
    batch: 1,
    tokens_per_stream: 8,
    timed_tokens: 7,
    seconds: 7 * 0.4,
    tokens_per_s: 1 / 0.4,
    max_steps_in_flight: 1,
  }];
  const fits = perLayer([sliced(1, engines), partial]);
  deepEqual(fits[0]!.engines.map((e) => e.name), ["kiln"], "llama.cpp lacks depth 4");
  close(fits[0]!.engines[0]!.step_s[1]!, 0.4, "Kiln's own decode run when no peer was timed");
});

Deno.test("a line that does not rise with depth gives no per-layer or full-depth figure", () => {
  // Kiln gets faster with depth: noise, not a layer's cost.
  const fits = perLayer([
    sliced(1, { kiln: [0.5, 0], "llama.cpp": [1, 0.1] }),
    sliced(2, { kiln: [0.3, 0], "llama.cpp": [1, 0.1] }),
  ]);
  const [llama, kiln] = fits[0]!.engines;
  equal(kiln!.full_depth_tokens_per_s_estimate, null);
  ok(/does not grow with depth/.test(kiln!.note!), String(kiln!.note));
  close(llama!.full_depth_tokens_per_s_estimate!, 1 / (1 + 4.8), "llama.cpp's line rises");
  const t = formatTable({
    bench: "kiln-bench",
    adapter: "test",
    date: "",
    runtime_data: {},
    deno: "2",
    options: {},
    probe: { bytes: 1, dispatches: 1, seconds_per_dispatch: 1, gb_per_s: 1, timer: "wall" },
    shapes: [],
    slices: fits,
  });
  ok(t.includes("kiln: 500, 300 ms per step: the step time does not grow with depth"), t);
});

Deno.test("batch-1 figures are medians over the rounds; the least-squares slope of a noisy line", () => {
  const m = batch1TokensPerS(sliced(2, { kiln: [0, 0.5], "llama.cpp": [0, 1] }));
  close(m.get("kiln")!, 1, "kiln");
  close(m.get("llama.cpp")!, 0.5, "llama.cpp");
  const [slope, intercept] = fitLine([1, 2, 3, 4], [1.1, 1.9, 3.1, 3.9]);
  close(slope, 0.96, "slope");
  close(intercept, 0.1, "intercept");
});

Deno.test("the table names a slice and prints each engine's time per layer", () => {
  const engines = { kiln: [0.2, 0.05], "llama.cpp": [1.5, 0.4] } as Record<
    string,
    [number, number]
  >;
  const shapes = [sliced(1, engines), sliced(4, engines)];
  const report: BenchReport = {
    bench: "kiln-bench",
    adapter: "test",
    date: "2026-01-01T00:00:00.000Z",
    runtime_data: {},
    deno: "2",
    options: {},
    probe: {
      bytes: 2 ** 20,
      dispatches: 1,
      seconds_per_dispatch: 1,
      gb_per_s: 1,
      timer: "timestamp",
    },
    shapes,
    slices: perLayer(shapes),
  };
  const t = formatTable(report);
  for (
    const s of [
      "slice: the first 4 of m's 48 layers, every width and expert kept (q4_k_m)",
      "m (q4_k_m) per layer, from depths 1, 4:",
      "kiln: 50.0 ms per layer + 200.0 ms; all 48 layers: 0.38 tokens/s (extrapolated)",
      "llama.cpp: 400.0 ms per layer + 1500.0 ms",
    ]
  ) {
    ok(t.includes(s), s);
  }
});
