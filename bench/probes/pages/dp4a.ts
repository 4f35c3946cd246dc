/**
 * In the browser: `dp4a_run.ts` on the page's adapter (SwiftShader in Chromium), run by
 * `node bench/kernels/matvec_browser.mjs --page dp4a` (`?quick`: one small shape, as
 * `test/browser/dp4a.test.mjs` runs it). The report lands on `window.__kiln.report`, with
 * `skipped` where the page's WGSL has no `dot4I8Packed`; `window.__kiln.results` holds one
 * check per shape: the three products within their float64 bounds (`dp4a_run.ts` throws past
 * them, which fails the check with its message).
 */
import { acquireGpu } from "../../../src/gpu/device.ts";
import { dp4aReport, hasDp4a } from "../dp4a_run.ts";

interface Check {
  name: string;
  passed: boolean;
  message?: string;
}
let report: Record<string, unknown> = { bench: "dp4a" };
const results: Check[] = [];
try {
  const gpu = await acquireGpu({ label: "bench:dp4a" });
  if (!hasDp4a()) {
    report = { bench: "dp4a", adapter: gpu.caps.adapter, skipped: "no dot4I8Packed in WGSL" };
  } else {
    report = await dp4aReport(
      gpu,
      await (await fetch(new URL("../dp4a_probe.wgsl", import.meta.url))).text(),
      new URLSearchParams(location.search).has("quick"),
    );
    for (const r of report.results as { n: number; k: number }[]) {
      results.push({
        name: `Q8_0 ${r.n}x${r.k}: dot4I8Packed, its float twin and Kiln's matvec within bounds`,
        passed: true,
      });
    }
  }
} catch (e) {
  results.push({ name: "dp4a", passed: false, message: (e as Error).stack ?? String(e) });
}
(globalThis as unknown as { __kiln: unknown }).__kiln = { done: true, results, report };
