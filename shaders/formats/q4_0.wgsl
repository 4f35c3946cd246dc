// Q4_0 (src/gpu/formats/q4_0.ts): 18-byte blocks of 32, f16 d at 0, 16 nibble bytes at 2
// (element i < 16 the low nibble of byte i, i + 16 its high nibble); element = d·(q − 8).
// One slice is the whole block.
//! import lib/quant_words

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 18u;

fn load_slice(b: u32, s: u32) -> Raw {
  return raw_d_words(b, 4u);
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let d = unpack2x16float(r.h.x).x;
  for (var i = 0u; i < 4u; i++) {
    v[i] = d * (nib_lo(r.q[i]) - 8.0);
    v[4u + i] = d * (nib_hi(r.q[i]) - 8.0);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 4u * g;
}
