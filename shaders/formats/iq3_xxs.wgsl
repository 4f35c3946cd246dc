// IQ3_XXS (ggml type 18), 98-byte blocks of 256 weights: f16 d at 0; 64 iq3xxs grid-index bytes
// at 2, one per 4 weights (an entry is 4 byte values, one word of `grid`); per 32 weights
// (sub-block s) a u32 at 66 + 4s: bits 7l..7l+6 the sign code of weights 8l..8l+7 (the eighth
// sign is the parity of the seven), bits 28..31 the scale. Weight = d · (0.5 + scale) / 2 ·
// grid · ±1. Slice s is sub-block s.
//! import lib/quant_words
//! import lib/iq_signs

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 98u;

@group(0) @binding(7) var<storage, read> grid: array<u32>;

fn load_slice(b: u32, s: u32) -> Raw {
  var r = iq_raw(b, b + 2u + 8u * s);
  r.q[2] = word_at(b + 66u + 4u * s);
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let db = unpack2x16float(r.h.x).x * (0.5 + f32(r.q[2] >> 28u)) * 0.5;
  for (var l = 0u; l < 4u; l++) {
    let code = (r.q[2] >> (7u * l)) & 127u;
    let signs = iq_code_signs(code);
    let q = r.q[l >> 1u] >> (16u * (l & 1u));
    v[2u * l] = iq_run(db, grid[q & 255u], signs);
    v[2u * l + 1u] = iq_run(db, grid[(q >> 8u) & 255u], signs >> 4u);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 32u * s + 4u * g;
}
