// TQ2_0 (ggml type 35): 256 ternary weights in 66 bytes: 64 bytes of 2-bit quants at 0, f16 d at
// 64. Element 128h + 32c + l (half h, c 0..3, l < 32) is bits 2c..2c+1 of byte 32h + l, and
// d * (q - 1).
//
// Slice s (0..7): bytes l0 = 8 (s & 3) .. l0 + 7 of half h = s >> 2 at every c; groups 2c and
// 2c + 1 are elements 128h + 32c + l0 + 0..3 and 4..7. Raw: q[0..1] those bytes, h.x d. Blocks
// are 2-byte aligned.
//! import lib/quant_words

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 66u;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  let qs = span(b + 32u * (s >> 2u) + 8u * (s & 3u), 2u);
  r.q[0] = qs[0];
  r.q[1] = qs[1];
  r.h.x = half_at(b + 64u);
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let d = unpack2x16float(r.h.x).x;
  for (var c = 0u; c < 4u; c++) {
    for (var i = 0u; i < 2u; i++) {
      v[2u * c + i] = d * (bits_each(r.q[i], 2u * c, 3u) - 1.0);
    }
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 128u * (s >> 2u) + 8u * (s & 3u) + 32u * (g >> 1u) + 4u * (g & 1u);
}
