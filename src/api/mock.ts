/**
 * The mock engine (stable), for an engine author: `MockEngine` implements the whole `LLMEngine`
 * contract on the CPU with deterministic tokens, as a reference to test a frontend, a router or
 * the conformance kit against without a GPU.
 *
 * ```ts
 * import { MockEngine } from "@kiln/kiln/engines/mock";
 * import { runConformance } from "@kiln/kiln/conformance";
 *
 * await runConformance(() => new MockEngine());
 * ```
 * @module
 */
export { MockEngine, type MockEngineOptions } from "../engines/mock/mod.ts";
