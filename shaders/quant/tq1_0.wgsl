// TQ1_0 (ggml type 34): 256 ternary weights in 54 bytes: qs (48 bytes) at 0, qh (4 bytes) at 48,
// f16 d at 52. Each byte holds base-3 trits t (first most significant, as v = sum t_n 3^(4-n),
// stored as ceil(256 v / 243)); trit n comes back as ((byte * 3^n) mod 256 * 3) >> 8, and the
// weight is d * (t - 1). Byte m < 32 of qs holds elements 32n + m (trits n = 0..4), byte 32 + m
// (m < 16) elements 160 + 16n + m, qh byte j elements 240 + 4n + j (n = 0..3).
//
// Slice s is elements 32s .. 32s + 31, group g elements 32s + 4g .. + 3:
// - s < 5: trit s of qs words 0..7 (q[g]);
// - s = 5, 6: trits 2 (s - 5) (groups 0..3) and 2 (s - 5) + 1 (groups 4..7) of qs words 8..11;
// - s = 7: trit 4 of qs words 8..11 (groups 0..3), trits 0..3 of the qh word (groups 4..7).
// Raw: q[0..7] qs words 0..7 (s < 5) or q[0..4] qs words 8..11 and qh (s >= 5); h.x d.
// Blocks are 2-byte aligned.
//! import lib/quant_words

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 54u;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  r.q = span(b + select(0u, 32u, s >= 5u), select(8u, 5u, s >= 5u));
  r.h.x = half_at(b + 52u);
  return r;
}

// Trit n (as t - 1: -1, 0, 1) of each byte of v, with integer multiplies only.
fn tq1_0_trits(v: u32, n: u32) -> vec4<f32> {
  let pow3 = select(select(select(select(1u, 3u, n >= 1u), 9u, n >= 2u), 27u, n >= 3u), 81u,
                    n >= 4u);
  let q = ((vec4<u32>(v) >> vec4<u32>(0u, 8u, 16u, 24u)) * pow3) & vec4<u32>(255u);
  return vec4<f32>((q * 3u) >> vec4<u32>(8u)) - 1.0;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let d = unpack2x16float(r.h.x).x;
  for (var g = 0u; g < 8u; g++) {
    var word = g;
    var n = s;
    if (s >= 5u) {
      let hi = g >= 4u;
      word = select(g & 3u, select(g, 4u, hi), s == 7u);
      n = select(2u * (s - 5u) + (g >> 2u), select(4u, g - 4u, hi), s == 7u);
    }
    v[g] = d * tq1_0_trits(r.q[word], n);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 32u * s + 4u * g;
}
