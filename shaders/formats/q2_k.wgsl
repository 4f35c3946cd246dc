// Q2_K (ggml type 10): 256 weights in 84 bytes. 16 bytes at 0: sub-block j (16 weights) has its
// 4-bit scale in the low nibble of byte j and its 4-bit min in the high; 64 bytes of 2-bit quants
// at 16; f16 d at 80, f16 dmin at 82. Element 128h + 32c + l (half h, c 0..3, l < 32) is bits
// 2c..2c+1 of quant byte 32h + l: d * scale * q - dmin * min of sub-block 8h + 2c + l / 16.
//
// Slice s (0..7): quant bytes l0 = 8 (s & 3) .. l0 + 7 of half h = s >> 2 at every shift c;
// groups 2c and 2c + 1 are elements 128h + 32c + l0 + 0..3 and 4..7. Raw: q[0..1] the 8 quant
// bytes, h.x d and dmin, h.yz the 8 scale bytes of half h. 84-byte blocks keep every word aligned.
//! import lib/quant_words

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 84u;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  let h = s >> 2u;
  let qs = b + 16u + 32u * h + 8u * (s & 3u);
  r.q[0] = word_at(qs);
  r.q[1] = word_at(qs + 4u);
  r.h = vec4<u32>(word_at(b + 80u), word_at(b + 8u * h), word_at(b + 8u * h + 4u), 0u);
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let dm = unpack2x16float(r.h.x);
  let k = (s & 3u) >> 1u; // l0 >= 16: the second sub-block of each 32
  for (var c = 0u; c < 4u; c++) {
    let sm = byte_of(r.h, 4u + 2u * c + k);
    let scale = dm.x * f32(sm & 15u);
    let offset = dm.y * f32(sm >> 4u);
    for (var i = 0u; i < 2u; i++) {
      v[2u * c + i] = scale * bits_each(r.q[i], 2u * c, 3u) - offset;
    }
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 128u * (s >> 2u) + 8u * (s & 3u) + 32u * (g >> 1u) + 4u * (g & 1u);
}
