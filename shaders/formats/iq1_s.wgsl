// IQ1_S (ggml type 19), 50-byte blocks of 256 weights: f16 d at 0; 32 low grid-index bytes at 2,
// one per 8 weights; per 32 weights (sub-block s) a u16 at 34 + 2s: bits 3l..3l+2 are index bits
// 8..10 of run l, bits 12..14 the scale, bit 15 the sign of the shift δ = ±1/8. An iq1s grid
// entry is 8 values in {-1, 0, 1} (signed bytes, two words of `grid`). Weight =
// d · (2 · scale + 1) · (grid + δ). Slice s is sub-block s.
//! import lib/quant_words

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 50u;

@group(0) @binding(7) var<storage, read> grid: array<u32>;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  r.h.x = half_at(b);
  r.h.y = half_at(b + 34u + 2u * s);
  r.q[0] = word_at(b + 2u + 4u * s);
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let qh = r.h.y;
  let dl = unpack2x16float(r.h.x).x * f32(2u * ((qh >> 12u) & 7u) + 1u);
  let delta = select(0.125, -0.125, (qh & 0x8000u) != 0u);
  for (var l = 0u; l < 4u; l++) {
    let e = 2u * (((r.q[0] >> (8u * l)) & 255u) | (((qh >> (3u * l)) & 7u) << 8u));
    v[2u * l] = dl * (i8x4(grid[e]) + delta);
    v[2u * l + 1u] = dl * (i8x4(grid[e + 1u]) + delta);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 32u * s + 4u * g;
}
