/**
 * A CPU mock engine implementing the full `LLMEngine` contract.
 * @module
 */
export { MockEngine, type MockEngineOptions } from "./mock_engine.ts";
export { blockHashes, mockToken, promptSeed } from "./tokens.ts";
