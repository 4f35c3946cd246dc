/**
 * Models: what a checkpoint is (HF config, the family descriptions of `arch/`, RoPE, the weight
 * map and its checks), with the checkpoint readers of `src/formats/` it is read through.
 * @module
 */
export * from "./config.ts";
export type { AttentionKnobs } from "./attention_knobs.ts";
export type { ExpertRole, LayerKind, MoeConfig } from "./arch/mod.ts";
export * from "./layer_kinds.ts";
export * from "./rope.ts";
export * from "../formats/source.ts";
export * from "../formats/url_source.ts";
export * from "../formats/safetensors.ts";
export * from "./weights.ts";
export type { LoadPhase, LoadProgress } from "./checkpoint.ts";
