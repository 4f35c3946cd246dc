// Reading float weights (the F32, F16 and BF16 formats in shaders/quant/, see
// src/gpu/quant/format.ts): the weights bound as 16-byte words at binding 2, as the block
// formats' lib/quant_words binds them as u32. A float "block" is 32 consecutive elements of a
// row (128 bytes of F32, 64 of F16 or BF16), so every load is a whole aligned vec4.
//! import lib/halves

@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;
