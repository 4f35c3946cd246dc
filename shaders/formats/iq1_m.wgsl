// IQ1_M (ggml type 29), 56-byte blocks of 256 weights: 32 low grid-index bytes at 0, one per 8
// weights; 16 qh bytes at 32, two per sub-block of 32 (nibble l of the pair: index bits 8..10 of
// run l, and in bit 3 the sign of its shift δ = ±1/8); 4 u16 at 48: u16 k holds the 3-bit scales
// of the four 16-weight halves of sub-blocks 2k and 2k+1 in bits 0..11 and nibble k of the f16
// block scale d in bits 12..15. The grid is IQ1_S's (8 signed byte values in {-1, 0, 1}, two
// words of `grid`). Weight = d · (2 · scale + 1) · (grid + δ). Slice s is sub-block s.
//! import lib/quant_words

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 56u;

@group(0) @binding(7) var<storage, read> grid: array<u32>;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  r.h.x = half_at(b + 32u + 2u * s);
  r.h.y = word_at(b + 48u);
  r.h.z = word_at(b + 52u);
  r.q[0] = word_at(b + 4u * s);
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let bits = ((r.h.y >> 12u) & 0xfu) | ((r.h.y >> 24u) & 0xf0u) | ((r.h.z >> 4u) & 0xf00u) |
    ((r.h.z >> 16u) & 0xf000u);
  let d = unpack2x16float(bits).x;
  let sc = select(r.h.y, r.h.z, s >= 4u) >> (16u * ((s >> 1u) & 1u) + 6u * (s & 1u));
  for (var l = 0u; l < 4u; l++) {
    let dl = d * f32(2u * ((sc >> (3u * (l >> 1u))) & 7u) + 1u);
    let qh = r.h.x >> (4u * l);
    let delta = select(0.125, -0.125, (qh & 8u) != 0u);
    let e = 2u * (((r.q[0] >> (8u * l)) & 255u) | ((qh & 7u) << 8u));
    v[2u * l] = dl * (i8x4(grid[e]) + delta);
    v[2u * l + 1u] = dl * (i8x4(grid[e + 1u]) + delta);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 32u * s + 4u * g;
}
