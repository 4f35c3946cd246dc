/**
 * Models: HF config, safetensors, weight checks, GPU upload, forward plans and verification.
 * @module
 */
export * from "./config.ts";
export type { AttentionKnobs } from "./attention_knobs.ts";
export type { ExpertRole, MoeConfig } from "./arch/mod.ts";
export * from "./rope.ts";
export * from "./source.ts";
export * from "./url_source.ts";
export * from "./safetensors.ts";
export * from "./weights.ts";
export * from "./gpu_model.ts";
export type { UploadOptions, UploadVia } from "./staging.ts";
export * from "./forward.ts";
export * from "./verify.ts";
export * from "./generate.ts";
