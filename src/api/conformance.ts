/**
 * The conformance kit (stable), for an engine author: `runConformance` drives an `LLMEngine`
 * through the contract's checks and throws a `ConformanceFailure` naming the first broken one;
 * `runConformanceReport` and `formatReport` give the whole report.
 * @module
 */
export { type ConformanceOptions } from "../conformance/kit.ts";
export {
  type CheckReport,
  ConformanceFailure,
  type ConformanceReport,
  FAILURE_KINDS,
  type FailureKind,
  formatReport,
  runConformance,
  runConformanceReport,
} from "../conformance/mod.ts";
