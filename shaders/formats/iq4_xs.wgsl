// IQ4_XS (ggml type 23): 136-byte super-blocks of 256 weights (every field word-aligned), eight
// sub-blocks of 32 with IQ4_NL's levels and 6-bit scales. f16 d at byte 0, u16 scales_h at 2 (bits
// 2j..2j+1: the top 2 bits of sub-block j's scale), 4 bytes scales_l at 4 (nibble j, low first:
// its low 4 bits), 128 nibble bytes at 8: sub-block j's 16 at 8 + 16j, element e < 16 the low
// nibble of byte e, e + 16 its high nibble. Weight = d * (scale_j - 32) * level[nibble]. The
// levels are IQ4_NL's bound table, read as in iq4_nl.wgsl. Slice s is sub-block s.
//! import lib/quant_words
//! import lib/iq4_levels

@group(0) @binding(7) var<storage, read> grid: array<u32>;

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 136u;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  r.h.x = word_at(b); // d, scales_h
  r.h.y = word_at(b + 4u); // scales_l
  for (var i = 0u; i < 4u; i++) {
    r.q[i] = word_at(b + 8u + 16u * s + 4u * i);
  }
  return iq4_with_table(r);
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  let scale = ((r.h.y >> (4u * s)) & 15u) | (((r.h.x >> (16u + 2u * s)) & 3u) << 4u);
  let dl = unpack2x16float(r.h.x).x * f32(i32(scale) - 32);
  return iq4_decode(r, dl);
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 32u * s + 4u * g;
}
