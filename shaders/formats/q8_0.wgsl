// Q8_0 (src/gpu/formats/q8_0.ts): 34-byte blocks of 32, f16 d at 0, int8 quants at 2.
// One slice is the whole block.
//! import lib/quant_words

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 34u;

fn load_slice(b: u32, s: u32) -> Raw {
  return raw_d_words(b, 8u);
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let d = unpack2x16float(r.h.x).x;
  for (var i = 0u; i < 8u; i++) {
    v[i] = d * i8x4(r.q[i]);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 4u * g;
}
