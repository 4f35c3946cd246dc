// Q5_K (src/gpu/formats/q5_k.ts): 176-byte super-blocks of 256, f16 d and dmin at 0, 12
// scale bytes at 4, 32 bytes qh at 16, 128 nibble bytes at 48 in Q4_K's order; element l of
// sub-block j adds 16 when bit j of qh[l] is set. Slices as Q4_K's, with the 16 qh bytes of
// their positions in q[4..7].
//! import lib/quant_words
//! import lib/k_scales

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 176u;

fn load_slice(b: u32, s: u32) -> Raw {
  var r = k_raw(b, b + 48u + 32u * (s >> 1u) + 16u * (s & 1u));
  // The 16 qh bytes of the slice's positions.
  for (var i = 0u; i < 4u; i++) {
    r.q[4u + i] = word_at(b + 16u + 16u * (s & 1u) + 4u * i);
  }
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let dm = unpack2x16float(r.h.x);
  let sm = k_slice_scales(r.h, s);
  let j = 2u * (s >> 1u);
  for (var i = 0u; i < 4u; i++) {
    let lo = nib_lo(r.q[i]) + 16.0 * bits_each(r.q[4u + i], j, 1u);
    let hi = nib_hi(r.q[i]) + 16.0 * bits_each(r.q[4u + i], j + 1u, 1u);
    v[i] = k_weights(dm, sm.xy, lo);
    v[4u + i] = k_weights(dm, sm.zw, hi);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 64u * (s >> 1u) + 16u * (s & 1u) + 32u * (g >> 2u) + 4u * (g & 3u);
}
