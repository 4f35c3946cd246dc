// IQ4_NL (ggml type 20): 18-byte blocks of 32 weights, Q4_0's layout with non-linear levels. f16
// d at byte 0, 16 nibble bytes at 2 (element e < 16 the low nibble of byte e, e + 16 its high
// nibble). Weight = d * level[nibble]. The 16 levels are int8, packed 4 to a word in the bound
// table (made from ggml's own dequantizer: src/gpu/formats/iq4_nl_values.ts); each slice
// carries the 4 words in q[4..7] and picks a level with selects and a shift, which on lavapipe
// runs at Q8_0's speed where a table read per weight took 1.4x. A slice is the whole block.
//! import lib/quant_words
//! import lib/iq4_levels

@group(0) @binding(7) var<storage, read> grid: array<u32>;

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 18u;

fn load_slice(b: u32, s: u32) -> Raw {
  return iq4_with_table(raw_d_words(b, 4u));
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  return iq4_decode(r, unpack2x16float(r.h.x).x);
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 4u * g;
}
