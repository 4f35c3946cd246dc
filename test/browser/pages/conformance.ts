/**
 * The conformance kit in the browser: against the mock engine, against the WebGPU engine on the
 * fortune model inside a Web Worker (`WorkerEngine`, SwiftShader WebGPU), and, when the page's
 * `?onnx=PATH` names fortune's ONNX export, against onnxruntime-web's engine in a Web Worker
 * (its f32 graph: SwiftShader has no `shader-f16`).
 */
import {
  type ConformanceReport,
  formatReport,
  runConformanceReport,
} from "../../../src/conformance/mod.ts";
import { MockEngine } from "../../../src/engines/mock/mod.ts";
import { WorkerEngine } from "../../../src/worker/client.ts";
import { runChecks } from "./report.ts";

const worker = () =>
  new Worker(new URL("../../../src/adapters/browser/worker.ts", import.meta.url), {
    type: "module",
  });
const fortune = {
  kind: "url" as const,
  base: new URL("/models/fortune/", location.href).href,
  name: "fortune",
};

const checks = (label: string, report: ConformanceReport) => [
  ...report.checks.map((c) =>
    [`conformance(${label}): ${c.name}`, () => {
      if (!c.passed) throw new Error(c.message ?? "failed");
      return Promise.resolve(`${c.ms.toFixed(1)} ms`);
    }] as const
  ),
  [`conformance(${label}): report`, () => {
    if (!report.passed) throw new Error(formatReport(report));
    return Promise.resolve();
  }] as const,
];

const mock = await runConformanceReport(() => new MockEngine());
// 16 blocks (256 tokens): kv_cache_overload processes more tokens than the cache holds.
const inWorker = await runConformanceReport(() =>
  new WorkerEngine(worker, { model: fortune, kvBlocks: 16 })
);
const onnx = new URLSearchParams(location.search).get("onnx");
const ort = onnx === null ? undefined : await runConformanceReport(() =>
  new WorkerEngine(worker, {
    model: { kind: "url", base: new URL(onnx, location.href).href, name: "fortune" },
    engine: "ort",
    ort: {
      variant: "model",
      wasmPaths: new URL("/node_modules/onnxruntime-web/dist/", location.href).href,
    },
  })
);
await runChecks([
  ...checks("mock", mock),
  ...checks("worker:fortune", inWorker),
  ...(ort ? checks("ort-worker:fortune", ort) : []),
]);
