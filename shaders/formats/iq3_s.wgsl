// IQ3_S (ggml type 21), 110-byte blocks of 256 weights: f16 d at 0; 64 low grid-index bytes at 2,
// one per 4 weights (an iq3s entry is 4 byte values, one word of `grid`); 8 qh bytes at 66 (byte
// s, bit k: index bit 8 of run k of sub-block s); 32 sign bytes at 74 (4 per sub-block, bit j:
// weight j of 8 negative); 4 scale bytes at 106 (nibble s & 1 of byte s >> 1 for sub-block s).
// Weight = d · (1 + 2 · scale) · grid · ±1. Slice s is sub-block s.
//! import lib/quant_words
//! import lib/iq_signs

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 110u;

@group(0) @binding(7) var<storage, read> grid: array<u32>;

fn load_slice(b: u32, s: u32) -> Raw {
  var r = iq_raw(b, b + 2u + 8u * s);
  r.h.y = half_at(b + 66u + (s & 6u)); // qh bytes s & 6 and (s & 6) + 1
  r.h.z = half_at(b + 106u + ((s >> 1u) & 2u)); // the scale bytes of sub-blocks s & 4 .. + 3
  r.q[2] = word_at(b + 74u + 4u * s);
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let sc = (r.h.z >> (8u * ((s >> 1u) & 1u) + 4u * (s & 1u))) & 15u;
  let db = unpack2x16float(r.h.x).x * f32(1u + 2u * sc);
  let qh = r.h.y >> (8u * (s & 1u));
  for (var k = 0u; k < 8u; k++) {
    let e = ((r.q[k >> 2u] >> (8u * (k & 3u))) & 255u) | (((qh >> k) & 1u) << 8u);
    v[k] = iq_run(db, grid[e], r.q[2] >> (4u * k));
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 32u * s + 4u * g;
}
