/**
 * The conformance kit: Dynamo's backend conformance checks for any `LLMEngine`.
 * @module
 */
export {
  type CheckReport,
  CHECKS,
  type ConformanceOptions,
  type ConformanceReport,
  formatReport,
  runConformance,
  runConformanceReport,
} from "./kit.ts";
export { ConformanceFailure, FAILURE_KINDS, type FailureKind, isFailureKind } from "./failure.ts";
export { type Assertion, type AssertionId, ASSERTIONS } from "./assertions.ts";
export { brokenEngine } from "./broken.ts";
export { engineFactory, type EngineMaker, engineNames, registerEngine } from "./engines.ts";
