// Q5_1 (ggml type 7): 24-byte blocks of 32 weights (every field word-aligned). f16 d at byte 0,
// f16 m at 2, the u32 qh at 4 (bit e: the fifth bit of element e), 16 nibble bytes at 8 (element
// e < 16 the low nibble of byte e, e + 16 its high nibble). Weight = d * q + m. A slice is the
// whole block.
//! import lib/quant_words

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

// The 5-bit levels of elements e..e+3: the 4 nibbles at bits 0..3 of each byte of `nibbles`,
// their fifth bits at bits e..e+3 of qh (spread to bit 4 of each byte by one multiply).
fn q5_1_levels(nibbles: u32, qh: u32, e: u32) -> vec4<f32> {
  let fifth = (((qh >> e) & 15u) * 0x00204081u) & 0x01010101u;
  let lv = nibbles | (fifth << 4u);
  return vec4<f32>((vec4<u32>(lv) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(31u));
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  let dm = unpack2x16float(r.h.x);
  var v: array<vec4<f32>, 8>;
  for (var i = 0u; i < 4u; i++) {
    v[i] = dm.x * q5_1_levels(r.q[i] & 0x0f0f0f0fu, r.h.y, 4u * i) + dm.y;
    v[4u + i] = dm.x * q5_1_levels((r.q[i] >> 4u) & 0x0f0f0f0fu, r.h.y, 16u + 4u * i) + dm.y;
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 4u * g;
}
