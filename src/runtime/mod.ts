/**
 * A model on the GPU: weight upload with bounded staging, the forward pass as replayable step
 * plans, and a plain single-sequence generation loop.
 * @module
 */
export * from "./gpu_model.ts";
export type { UploadOptions, UploadVia } from "./staging.ts";
export * from "./forward.ts";
export * from "./generate.ts";
