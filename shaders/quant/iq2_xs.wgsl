// IQ2_XS (ggml type 17), 74-byte blocks of 256 weights: f16 d at 0; 32 u16 at 2, one per 8
// weights: a 9-bit iq2xs grid index (8 byte values, two words of `grid`) and a 7-bit sign code
// (the eighth sign is the parity of the seven); 8 scale bytes at 66, byte s for sub-block s (low
// nibble: its first 16 weights). Weight = d · (0.5 + scale) / 4 · grid · ±1. Slice s is
// sub-block s.
//! import lib/quant_words

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 74u;

@group(0) @binding(7) var<storage, read> grid: array<u32>;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  r.h.x = half_at(b);
  r.h.y = half_at(b + 66u + (s & 6u)); // scale bytes s & 6 and (s & 6) + 1
  let q = span(b + 2u + 8u * s, 2u);
  r.q[0] = q[0];
  r.q[1] = q[1];
  return r;
}

// ±1 for 4 weights from sign bits 0..3 of `bits`.
fn iq2_xs_signs(bits: u32) -> vec4<f32> {
  let neg = (vec4<u32>(bits) & vec4<u32>(1u, 2u, 4u, 8u)) != vec4<u32>(0u);
  return select(vec4<f32>(1.0), vec4<f32>(-1.0), neg);
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let d = unpack2x16float(r.h.x).x;
  let sc = r.h.y >> (8u * (s & 1u));
  for (var l = 0u; l < 4u; l++) {
    let db = d * (0.5 + f32((sc >> (4u * (l >> 1u))) & 15u)) * 0.25;
    let q = r.q[l >> 1u] >> (16u * (l & 1u));
    let code = (q >> 9u) & 127u;
    let signs = code | ((countOneBits(code) & 1u) << 7u);
    let e = 2u * (q & 511u);
    v[2u * l] = db * bits_each(grid[e], 0u, 255u) * iq2_xs_signs(signs);
    v[2u * l + 1u] = db * bits_each(grid[e + 1u], 0u, 255u) * iq2_xs_signs(signs >> 4u);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 32u * s + 4u * g;
}
