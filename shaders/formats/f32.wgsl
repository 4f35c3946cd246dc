// F32 (src/gpu/formats/f32.ts): a block is 32 consecutive elements, 128 bytes; one slice is
// the whole block, eight 16-byte loads.
//! import lib/float_words

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 128u;

fn load_slice(b: u32, s: u32) -> Raw {
  return float_block(b);
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  for (var j = 0u; j < 8u; j++) {
    v[j] = bitcast<vec4<f32>>(r.q[j]);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 4u * g;
}
