/**
 * The Kiln engine contract: Dynamo's backend types and `LLMEngine` in TypeScript.
 * @module
 */
export * from "./types.ts";
export * from "./errors.ts";
export { describe } from "./describe.ts";
export * from "./engine.ts";
export * from "./engine_hooks.ts";
export * from "./kv_events.ts";
export * from "./kv_capacity.ts";
/**
 * Constructors for stream chunks: `token`, `stop`, `length`, `eos`, `cancelled`, `error`,
 * `withTokens`, `withUsage`, `usage`.
 */
export * as output from "./output.ts";
export { finishKind, isTerminal, usage } from "./output.ts";
export { parseFinishReason, parseOutput, parseRequest, requestToWire, toWire } from "./wire.ts";
export {
  StreamContractError,
  type StreamViolation,
  validateRequest,
  validateStream,
} from "./validate.ts";
