// Q4_K (src/gpu/quant/formats/q4_k.ts): 144-byte super-blocks of 256, f16 d and dmin at 0, 12
// scale bytes at 4, 128 nibble bytes at 16 (sub-blocks 2p and 2p+1: low and high nibbles of the
// 32 bytes at 16 + 32p). Slice s is half of a 64-weight chunk: 16 nibble bytes giving 16 weights
// of each of its two sub-blocks.
//! import lib/quant_words
//! import lib/k_scales

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 144u;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  r.h = vec4<u32>(word_at(b), word_at(b + 4u), word_at(b + 8u), word_at(b + 12u));
  let qs = b + 16u + 32u * (s >> 1u) + 16u * (s & 1u);
  for (var i = 0u; i < 4u; i++) {
    r.q[i] = word_at(qs + 4u * i);
  }
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let dm = unpack2x16float(r.h.x);
  let j = 2u * (s >> 1u);
  let a = k_scale_min(r.h, j);
  let b = k_scale_min(r.h, j + 1u);
  for (var i = 0u; i < 4u; i++) {
    v[i] = (dm.x * a.x) * nib_lo(r.q[i]) - dm.y * a.y;
    v[4u + i] = (dm.x * b.x) * nib_hi(r.q[i]) - dm.y * b.y;
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 64u * (s >> 1u) + 16u * (s & 1u) + 32u * (g >> 2u) + 4u * (g & 3u);
}
