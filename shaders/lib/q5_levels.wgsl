// The 5-bit levels of Q5_0 and Q5_1 (a slice is the whole block: its qh in r.h.y, bit e the
// fifth bit of element e; its 16 nibble bytes in r.q[0..3], element e < 16 the low nibble of
// byte e, e + 16 its high nibble). Needs lib/quant_words' `Raw`.

// The 5-bit levels of elements e..e+3: the 4 nibbles at bits 0..3 of each byte of `nibbles`,
// their fifth bits at bits e..e+3 of qh (spread to bit 4 of each byte by one multiply).
fn q5_levels(nibbles: u32, qh: u32, e: u32) -> vec4<f32> {
  let fifth = (((qh >> e) & 15u) * 0x00204081u) & 0x01010101u;
  let lv = nibbles | (fifth << 4u);
  return vec4<f32>((vec4<u32>(lv) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(31u));
}

// The levels of elements 4i..4i+3 (the low nibbles of word i).
fn q5_lo(r: Raw, i: u32) -> vec4<f32> {
  return q5_levels(r.q[i] & 0x0f0f0f0fu, r.h.y, 4u * i);
}

// The levels of elements 16 + 4i..16 + 4i+3 (the high nibbles of word i).
fn q5_hi(r: Raw, i: u32) -> vec4<f32> {
  return q5_levels((r.q[i] >> 4u) & 0x0f0f0f0fu, r.h.y, 16u + 4u * i);
}
