// Q4_1 (src/gpu/formats/q4_1.ts): 20-byte blocks of 32, f16 d and m at 0, 16 nibble bytes
// at 4 in Q4_0's order; element = d·q + m. Every field is word-aligned. One slice is the block.
//! import lib/quant_words

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 20u;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  r.h.x = word_at(b);
  for (var i = 0u; i < 4u; i++) {
    r.q[i] = word_at(b + 4u + 4u * i);
  }
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let dm = unpack2x16float(r.h.x);
  for (var i = 0u; i < 4u; i++) {
    v[i] = dm.x * nib_lo(r.q[i]) + dm.y;
    v[4u + i] = dm.x * nib_hi(r.q[i]) + dm.y;
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 4u * g;
}
