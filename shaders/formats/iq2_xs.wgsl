// IQ2_XS (ggml type 17), 74-byte blocks of 256 weights: f16 d at 0; 32 u16 at 2, one per 8
// weights: a 9-bit iq2xs grid index (8 byte values, two words of `grid`) and a 7-bit sign code
// (the eighth sign is the parity of the seven); 8 scale bytes at 66, byte s for sub-block s (low
// nibble: its first 16 weights). Weight = d · (0.5 + scale) / 4 · grid · ±1. Slice s is
// sub-block s.
//! import lib/quant_words
//! import lib/iq_signs

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 74u;

@group(0) @binding(7) var<storage, read> grid: array<u32>;

fn load_slice(b: u32, s: u32) -> Raw {
  var r = iq_raw(b, b + 2u + 8u * s);
  r.h.y = half_at(b + 66u + (s & 6u)); // scale bytes s & 6 and (s & 6) + 1
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let d = unpack2x16float(r.h.x).x;
  let sc = r.h.y >> (8u * (s & 1u));
  for (var l = 0u; l < 4u; l++) {
    let db = d * (0.5 + f32((sc >> (4u * (l >> 1u))) & 15u)) * 0.25;
    let q = r.q[l >> 1u] >> (16u * (l & 1u));
    let code = (q >> 9u) & 127u;
    let signs = iq_code_signs(code);
    let e = 2u * (q & 511u);
    v[2u * l] = iq_run(db, grid[e], signs);
    v[2u * l + 1u] = iq_run(db, grid[e + 1u], signs >> 4u);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 32u * s + 4u * g;
}
