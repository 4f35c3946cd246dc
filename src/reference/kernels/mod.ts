/**
 * Float64 TypeScript references of the GPU kernels.
 * @module
 */
export * from "./dense.ts";
export * from "./attention.ts";
export * from "./sampling.ts";
export * from "../../gpu/token_mask_bits.ts";
export * from "./tokens.ts";
export * from "./moe.ts";
export * from "./short_conv.ts";
export * from "./gated_delta_net.ts";
export * from "./ssm_scan.ts";
export * from "./ssm_gate_norm.ts";
export * from "./query_gate.ts";
export * from "./delta_prep.ts";
