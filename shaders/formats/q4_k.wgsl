// Q4_K (src/gpu/formats/q4_k.ts): 144-byte super-blocks of 256, f16 d and dmin at 0, 12
// scale bytes at 4, 128 nibble bytes at 16 (sub-blocks 2p and 2p+1: low and high nibbles of the
// 32 bytes at 16 + 32p). Slice s is half of a 64-weight chunk: 16 nibble bytes giving 16 weights
// of each of its two sub-blocks.
//! import lib/quant_words
//! import lib/k_scales

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 144u;

fn load_slice(b: u32, s: u32) -> Raw {
  return k_raw(b, b + 16u + 32u * (s >> 1u) + 16u * (s & 1u));
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let dm = unpack2x16float(r.h.x);
  let sm = k_slice_scales(r.h, s);
  for (var i = 0u; i < 4u; i++) {
    v[i] = k_weights(dm, sm.xy, nib_lo(r.q[i]));
    v[4u + i] = k_weights(dm, sm.zw, nib_hi(r.q[i]));
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 64u * (s >> 1u) + 16u * (s & 1u) + 32u * (g >> 2u) + 4u * (g & 3u);
}
