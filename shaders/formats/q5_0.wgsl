// Q5_0 (ggml type 6): 22-byte blocks of 32 weights. f16 d at byte 0, the u32 qh at 2 (bit e: the
// fifth bit of element e), 16 nibble bytes at 6 (element e < 16 the low nibble of byte e, e + 16
// its high nibble). Weight = d * (q - 16). A slice is the whole block.
//! import lib/quant_words
//! import lib/q5_levels

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 22u;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  r.h.x = half_at(b);
  let q = span(b + 2u, 5u); // qh, then the 4 nibble words
  r.h.y = q[0];
  for (var i = 0u; i < 4u; i++) {
    r.q[i] = q[1u + i];
  }
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  let d = unpack2x16float(r.h.x).x;
  var v: array<vec4<f32>, 8>;
  for (var i = 0u; i < 4u; i++) {
    v[i] = d * (q5_lo(r, i) - 16.0);
    v[4u + i] = d * (q5_hi(r, i) - 16.0);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 4u * g;
}
