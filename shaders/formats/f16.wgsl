// F16 (src/gpu/formats/f16.ts): a block is 32 consecutive elements, 64 bytes; one slice is
// the whole block, four 16-byte loads.
//! import lib/float_words

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 64u;

fn load_slice(b: u32, s: u32) -> Raw {
  return float_block(b);
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  for (var j = 0u; j < 4u; j++) {
    v[2u * j] = f16x4(r.q[j].xy);
    v[2u * j + 1u] = f16x4(r.q[j].zw);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 4u * g;
}
