// TQ1_0 (ggml type 34): 256 ternary weights in 54 bytes: qs (48 bytes) at 0, qh (4 bytes) at 48,
// f16 d at 52. Each byte holds base-3 trits t (first most significant, as v = sum t_n 3^(4-n),
// stored as ceil(256 v / 243)); the weight is d * (t - 1). Byte m < 32 of qs holds elements
// 32n + m (trits n = 0..4), byte 32 + m (m < 16) elements 160 + 16n + m, qh byte j elements
// 240 + 4n + j (n = 0..3). Trit n of a byte q comes out with integer multiplies, as ggml does
// it: q 3^n mod 256 moves it to the top, and (3 q') >> 8 reads it.
//
// Slices (the first four trits of 8 bytes, or one trit of 32 or 16 bytes):
// - s < 4: trits 0..3 of qs bytes 8s .. 8s + 7; group 2n + i is trit n of bytes 8s + 4i ..;
// - s = 4: trit 4 of qs bytes 0..31; group g is bytes 4g ..;
// - s = 5, 6: trits 0..3 of qs bytes 32 + 8 (s - 5) .. + 7, groups as for s < 4;
// - s = 7: trit 4 of qs bytes 32..47 (groups 0..3) and trits 0..3 of the qh bytes (groups 4..7).
// Raw: q[g] the word group g reads (a word repeated for each trit taken from it), h.x d.
// Neither function branches on s: `load_slice` reads 8 words at the slice's offset and picks
// with selects, `decode` takes a multiplier per group. On lavapipe that made the product 1.2x
// faster than branching per slice kind (which reads fewer words). Blocks are 2-byte aligned.
//! import lib/quant_words

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 54u;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  let off = select(select(8u * s, 32u + 8u * (s - 5u), s > 4u), select(0u, 32u, s == 7u),
                   s == 4u || s == 7u);
  let w = span(b + off, 8u);
  for (var g = 0u; g < 8u; g++) {
    r.q[g] = select(w[g & 1u], select(w[g], w[min(g, 4u)], s == 7u), s == 4u || s == 7u);
  }
  r.h.x = half_at(b + 52u);
  return r;
}

// 3^n for n in 0..4.
fn tq1_0_pow3(n: u32) -> u32 {
  return select(select(select(select(1u, 3u, n >= 1u), 9u, n >= 2u), 27u, n >= 3u), 81u, n >= 4u);
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let d = unpack2x16float(r.h.x).x;
  for (var g = 0u; g < 8u; g++) {
    // The trit group g reads: 4 for s = 4 and the qs half of s = 7, g - 4 for qh, else g / 2.
    let n = select(select(g >> 1u, 4u, s == 4u), select(4u, g - 4u, g >= 4u), s == 7u);
    let q = ((vec4<u32>(r.q[g]) >> vec4<u32>(0u, 8u, 16u, 24u)) * tq1_0_pow3(n)) & vec4<u32>(255u);
    v[g] = d * vec4<f32>((q * 3u) >> vec4<u32>(8u)) - d;
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  if (s == 4u || s == 7u) {
    return 32u * s + 4u * g;
  }
  let run = 4u * (g & 1u);
  return select(8u * s + 32u * (g >> 1u), 160u + 8u * (s - 5u) + 16u * (g >> 1u), s > 4u) + run;
}
