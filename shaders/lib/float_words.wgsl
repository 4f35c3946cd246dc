// Reading float weights (the F32, F16 and BF16 formats in shaders/formats/, see
// src/gpu/formats/format.ts): the weights bound as 16-byte words at binding 2, as the block
// formats' lib/quant_words binds them as u32. A float "block" is 32 consecutive elements of a
// row (128 bytes of F32, 64 of F16 or BF16), so every load is a whole aligned vec4.
//! import lib/halves

@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;

// One float block's raw words: its BLOCK_BYTES / 16 aligned 16-byte loads (4 for F16 and BF16,
// 8 for F32). Needs the fragment's BLOCK_BYTES.
struct Raw {
  q: array<vec4<u32>, BLOCK_BYTES / 16u>,
}

// The block at byte `b` (a multiple of 16), whole: every float fragment's slice.
fn float_block(b: u32) -> Raw {
  var r: Raw;
  let i = b / 16u;
  for (var j = 0u; j < BLOCK_BYTES / 16u; j++) {
    r.q[j] = w[i + j];
  }
  return r;
}
