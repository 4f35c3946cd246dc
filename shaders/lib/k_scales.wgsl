// The packed 6-bit (scale, min) pairs that Q4_K and Q5_K share (src/gpu/quant/kscales.ts).
//! import lib/quant_words

// The (scale, min) of sub-block j; the 12 scale bytes are bytes 4..15 of h.
fn k_scale_min(h: vec4<u32>, j: u32) -> vec2<f32> {
  let lo = vec2<u32>(byte_of(h, 4u + j) & 63u, byte_of(h, 8u + j) & 63u);
  let c = byte_of(h, 8u + j);
  let hi = vec2<u32>((c & 15u) | ((byte_of(h, j) >> 6u) << 4u),
                     (c >> 4u) | ((byte_of(h, 4u + j) >> 6u) << 4u));
  return vec2<f32>(select(hi, lo, j < 4u));
}
