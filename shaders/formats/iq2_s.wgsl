// IQ2_S (ggml type 22), 82-byte blocks of 256 weights: f16 d at 0; 32 low grid-index bytes at 2
// and 32 sign bytes at 34 (one each per 8 weights; sign bit j: weight j negative); 8 qh bytes
// at 66 (byte s, bits 2l and 2l+1: index bits 8 and 9 of run l of sub-block s); 8 scale bytes at
// 74 (low nibble: the first 16 weights of sub-block s). An iq2s grid entry is 8 byte values, two
// words of `grid`. Weight = d · (0.5 + scale) / 4 · grid · ±1. Slice s is sub-block s.
//! import lib/quant_words
//! import lib/iq_signs

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 82u;

@group(0) @binding(7) var<storage, read> grid: array<u32>;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  r.h.x = half_at(b);
  r.h.y = half_at(b + 66u + (s & 6u)); // qh bytes s & 6 and (s & 6) + 1
  r.h.z = half_at(b + 74u + (s & 6u)); // scale bytes, likewise
  r.q[0] = word_at(b + 2u + 4u * s);
  r.q[1] = word_at(b + 34u + 4u * s);
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let d = unpack2x16float(r.h.x).x;
  let qh = r.h.y >> (8u * (s & 1u));
  let sc = r.h.z >> (8u * (s & 1u));
  for (var l = 0u; l < 4u; l++) {
    let db = d * (0.5 + f32((sc >> (4u * (l >> 1u))) & 15u)) * 0.25;
    let e = 2u * (((r.q[0] >> (8u * l)) & 255u) | (((qh >> (2u * l)) & 3u) << 8u));
    let signs = r.q[1] >> (8u * l);
    v[2u * l] = iq_run(db, grid[e], signs);
    v[2u * l + 1u] = iq_run(db, grid[e + 1u], signs >> 4u);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 32u * s + 4u * g;
}
