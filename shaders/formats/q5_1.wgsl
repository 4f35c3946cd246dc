// Q5_1 (ggml type 7): 24-byte blocks of 32 weights (every field word-aligned). f16 d at byte 0,
// f16 m at 2, the u32 qh at 4 (bit e: the fifth bit of element e), 16 nibble bytes at 8 (element
// e < 16 the low nibble of byte e, e + 16 its high nibble). Weight = d * q + m. A slice is the
// whole block.
//! import lib/quant_words
//! import lib/q5_levels

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 24u;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  r.h.x = word_at(b);
  r.h.y = word_at(b + 4u);
  for (var i = 0u; i < 4u; i++) {
    r.q[i] = word_at(b + 8u + 4u * i);
  }
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  let dm = unpack2x16float(r.h.x);
  var v: array<vec4<f32>, 8>;
  for (var i = 0u; i < 4u; i++) {
    v[i] = dm.x * q5_lo(r, i) + dm.y;
    v[4u + i] = dm.x * q5_hi(r, i) + dm.y;
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 4u * g;
}
