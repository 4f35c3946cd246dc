/**
 * Kiln's internals: UNSTABLE. Every folder barrel of `src/` as a namespace (`gpu.prepareProduct`,
 * `reference.ReferenceModel`, `openai.ChatCompletions`, ...), for tools, tests and experiments
 * that need more than the stable entry points give. Any name here may change or go in any
 * release, minor and patch included; nothing here is covered by the promise of the stable entry
 * points (`@kiln/kiln`, `@kiln/kiln/contract`, `@kiln/kiln/conformance`, `@kiln/kiln/metrics`,
 * `@kiln/kiln/engines/mock`; see docs/api.md). When you need a name from here, say so in an
 * issue: that is how names become stable.
 *
 * ```ts
 * import { worker } from "@kiln/kiln/internal";
 *
 * // The Prompt API follows a W3C draft, so it is not stable yet.
worker.installLanguageModel({ model: new URL("models/fortune/", location.href) });
 * ```
 * @module
 */
export * as contract from "./contract/mod.ts";
export * as conformance from "./conformance/mod.ts";
export * as metrics from "./metrics/mod.ts";
export * as formatsGguf from "./formats/gguf/mod.ts";
export * as model from "./model/mod.ts";
export * as runtime from "./runtime/mod.ts";
export * as reference from "./reference/mod.ts";
export * as convert from "./convert/mod.ts";
export * as gpu from "./gpu/mod.ts";
export * as text from "./text/mod.ts";
export * as openai from "./openai/mod.ts";
export * as store from "./store/mod.ts";
export * as worker from "./worker/mod.ts";
export * as webgpu from "./engines/webgpu/mod.ts";
export * as ort from "./engines/ort/mod.ts";
export * as mock from "./engines/mock/mod.ts";
