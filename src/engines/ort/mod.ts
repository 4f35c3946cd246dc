/**
 * `OrtEngine`: the LLMEngine contract over onnxruntime-web (WebGPU EP, or wasm) on an ONNX
 * decoder export, sampled by Kiln's WGSL sampler on ORT's own device.
 * @module
 */
export { OrtEngine, type OrtEngineOptions } from "./engine.ts";
export { isOnnxExport, VARIANTS } from "./session.ts";
