/**
 * GGUF/ggml block-quantized weights: formats, float64 (de)quantization, the reference for the
 * quantized matvec, and random well-formed blocks for tests and benchmarks. The kernel itself is
 * `prepareQuantMatvec` in `../kernels/matvec_quant.ts`.
 * @module
 */
export * from "./formats.ts";
export { loadQuantTable, loadQuantTables, parseQuantTable, quantTableBuffer } from "./tables.ts";
export { quantMatvecRef } from "./reference.ts";
export { randomBlocks } from "./random_blocks.ts";
