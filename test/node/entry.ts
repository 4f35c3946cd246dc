// Bundle entry for the Node suite: the conformance kit and the mock engine, as Node sees them.
export {
  brokenEngine,
  formatReport,
  runConformance,
  runConformanceReport,
} from "../../src/conformance/mod.ts";
export { MockEngine } from "../../src/engines/mock/mod.ts";
export { parseRequest, toWire } from "../../src/contract/mod.ts";
