/**
 * `OrtEngine`: Kiln's `LLMEngine` contract over onnxruntime-web (WebGPU execution provider, or
 * wasm) running an ONNX decoder export in the transformers.js layout, sampled by Kiln's WGSL
 * sampler on ORT's own device.
 *
 * onnxruntime-web is an optional peer dependency: install it to use this entry point. It is
 * loaded by a dynamic import when `OrtEngine.start()` runs, and nothing else in Kiln imports
 * this module, so apps that never import `@kiln/kiln/engines/ort` do not need it.
 *
 * ```ts
 * import { OrtEngine } from "@kiln/kiln/engines/ort";
 * import { urlFiles } from "@kiln/kiln/model";
 *
 * const base = "https://huggingface.co/onnx-community/SmolLM2-135M-Instruct/resolve/main/";
 * const engine = new OrtEngine({ files: urlFiles(base), name: "SmolLM2-135M-Instruct" });
 * const config = await engine.start(0n);
 * ```
 * @module
 */
export { OrtEngine, type OrtEngineOptions } from "./engine.ts";
export type { RequestStats } from "../live_requests.ts";
export type { GuidedForcing } from "../token_mask.ts";
export type { GuidedLimits } from "../guided/limits.ts";
export { type ExecutionProvider, isOnnxExport, VARIANTS } from "./session.ts";
