// Q3_K (ggml type 11): 256 weights in 110 bytes. hmask (32 bytes) at 0, 2-bit quants (64 bytes)
// at 32, 12 bytes of 6-bit scales at 96, f16 d at 108. Element 128h + 32c + l (half h, c 0..3,
// l < 32) has low bits 2c..2c+1 of quant byte 32h + l and high bit 4h + c of hmask byte l; it is
// d * (scale - 32) * (low + 4 high - 4) with the scale of sub-block i = 8h + 2c + l / 16: low
// nibble i / 8 of scale byte i % 8, top bits 2 (i / 4).. of scale byte 8 + i % 4.
//
// Slice s (0..7): bytes l0 = 8 (s & 3) .. l0 + 7 of half h = s >> 2 at every c, as Q2_K; groups
// 2c and 2c + 1 are elements 128h + 32c + l0 + 0..3 and 4..7. Raw: q[0..1] the 8 quant bytes,
// q[2..3] the 8 hmask bytes, h.x d, h.yzw the 12 scale bytes. Blocks are 2-byte aligned.
//! import lib/quant_words

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 110u;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  let l0 = 8u * (s & 3u);
  let qs = span(b + 32u + 32u * (s >> 2u) + l0, 2u);
  let hm = span(b + l0, 2u);
  let sc = span(b + 96u, 3u);
  r.q[0] = qs[0];
  r.q[1] = qs[1];
  r.q[2] = hm[0];
  r.q[3] = hm[1];
  r.h = vec4<u32>(half_at(b + 108u), sc[0], sc[1], sc[2]);
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let d = unpack2x16float(r.h.x).x;
  let h = s >> 2u;
  let k = (s & 3u) >> 1u;
  for (var c = 0u; c < 4u; c++) {
    // Sub-block 8h + 2c + k: i % 8 = 2c + k, i / 8 = h, i % 4 = 2 (c & 1) + k, i / 4 = 2h + c / 2.
    let lo = (byte_of(r.h, 4u + 2u * c + k) >> (4u * h)) & 15u;
    let hi = (byte_of(r.h, 12u + 2u * (c & 1u) + k) >> (4u * h + 2u * (c >> 1u))) & 3u;
    let scale = d * (f32(lo | (hi << 4u)) - 32.0);
    for (var i = 0u; i < 2u; i++) {
      let q = bits_each(r.q[i], 2u * c, 3u) + 4.0 * bits_each(r.q[2u + i], 4u * h + c, 1u);
      v[2u * c + i] = scale * (q - 4.0);
    }
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 128u * (s >> 2u) + 8u * (s & 3u) + 32u * (g >> 1u) + 4u * (g & 1u);
}
