// IQ2_XXS (ggml type 16), 66-byte blocks of 256 weights: f16 d at 0; per 32 weights (sub-block
// s) two u32 at 2 + 8s: byte l of the first is an iq2xxs grid index (8 byte values, two words of
// `grid`) for weights 8l..8l+7, bits 7l..7l+6 of the second their sign code (the eighth sign is
// the parity of the seven) and bits 28..31 the scale. Weight = d · (0.5 + scale) / 4 · grid · ±1.
// Slice s is sub-block s.
//! import lib/quant_words
//! import lib/iq_signs

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 66u;

@group(0) @binding(7) var<storage, read> grid: array<u32>;

fn load_slice(b: u32, s: u32) -> Raw {
  return iq_raw(b, b + 2u + 8u * s);
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let db = unpack2x16float(r.h.x).x * (0.5 + f32(r.q[1] >> 28u)) * 0.25;
  for (var l = 0u; l < 4u; l++) {
    let code = (r.q[1] >> (7u * l)) & 127u;
    let signs = iq_code_signs(code);
    let e = 2u * ((r.q[0] >> (8u * l)) & 255u);
    v[2u * l] = iq_run(db, grid[e], signs);
    v[2u * l + 1u] = iq_run(db, grid[e + 1u], signs >> 4u);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 32u * s + 4u * g;
}
