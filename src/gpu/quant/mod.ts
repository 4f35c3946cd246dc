/**
 * Weight formats of the product kernels: the GGUF/ggml block-quantized ones (float64
 * (de)quantization, the reference for the quantized matvec, random well-formed blocks for tests
 * and benchmarks) and the float ones (`product_formats.ts`). The kernels themselves are
 * `prepareQuantMatvec` and `prepareQuantGemm` in `../kernels/`.
 * @module
 */
export * from "./formats.ts";
export { FLOAT_FORMATS, productFormat, productRowBytes, productTakes } from "./product_formats.ts";
export { loadQuantTable, loadQuantTables, parseQuantTable, quantTableBuffer } from "./tables.ts";
export { randomBlocks } from "./random_blocks.ts";
