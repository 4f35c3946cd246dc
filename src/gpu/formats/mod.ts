/**
 * Weight formats of the product kernels: the GGUF/ggml block-quantized ones (float64
 * (de)quantization, the reference for the quantized matvec, random well-formed blocks for tests
 * and benchmarks) and the float ones, in one registry (`registry.ts`). The kernels are
 * `prepareMatvec` and `prepareTiledGemm` in `../product/`.
 * @module
 */
export * from "./registry.ts";

export { loadQuantTable, loadQuantTables, parseQuantTable, quantTableBuffer } from "./tables.ts";
export { randomBlocks } from "./random_blocks.ts";
