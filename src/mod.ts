/**
 * Kiln: LLM inference on WebGPU behind NVIDIA Dynamo's backend contract.
 *
 * The root module exports the contract, the conformance kit and the metrics. Engines are
 * separate entry points (`@kiln/kiln/engines/mock`, ...).
 * @module
 */
export * from "./contract/mod.ts";
export * from "./conformance/mod.ts";
export * from "./metrics/mod.ts";
