// The packed 6-bit (scale, min) pairs that Q4_K and Q5_K share (src/gpu/formats/kscales.ts).
//! import lib/quant_words

// The (scale, min) of sub-block j; the 12 scale bytes are bytes 4..15 of h.
fn k_scale_min(h: vec4<u32>, j: u32) -> vec2<f32> {
  let lo = vec2<u32>(byte_of(h, 4u + j) & 63u, byte_of(h, 8u + j) & 63u);
  let c = byte_of(h, 8u + j);
  let hi = vec2<u32>((c & 15u) | ((byte_of(h, j) >> 6u) << 4u),
                     (c >> 4u) | ((byte_of(h, 4u + j) >> 6u) << 4u));
  return vec2<f32>(select(hi, lo, j < 4u));
}

// A Q4_K/Q5_K slice's raw words: the block's first 16 bytes (f16 d, f16 dmin, the 12 scale bytes)
// in h, and the 16 nibble bytes at byte `qs` in q[0..3].
fn k_raw(b: u32, qs: u32) -> Raw {
  var r: Raw;
  r.h = vec4<u32>(word_at(b), word_at(b + 4u), word_at(b + 8u), word_at(b + 12u));
  for (var i = 0u; i < 4u; i++) {
    r.q[i] = word_at(qs + 4u * i);
  }
  return r;
}

// The (scale, min) of slice s's two sub-blocks: 2·(s >> 1) in xy, the next in zw.
fn k_slice_scales(h: vec4<u32>, s: u32) -> vec4<f32> {
  let j = 2u * (s >> 1u);
  return vec4<f32>(k_scale_min(h, j), k_scale_min(h, j + 1u));
}

// 4 weights d · scale · q − dmin · min, with (d, dmin) = `dm` and (scale, min) = `sm`.
fn k_weights(dm: vec2<f32>, sm: vec2<f32>, q: vec4<f32>) -> vec4<f32> {
  return (dm.x * sm.x) * q - dm.y * sm.y;
}
