// Q6_K (src/gpu/formats/q6_k.ts): 210-byte super-blocks of 256, ql at 0, qh at 128, int8
// scales at 192, f16 d at 208. Slice s is 8 positions of a 128-weight half (s >> 2), in each of
// its 4 groups of 32: ql bytes in q[0..3], qh bytes in q[4..5], the half's 8 scales in h.yz.
//! import lib/quant_words

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 210u;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  let half = s >> 2u;
  let l = 8u * (s & 3u);
  let ql0 = span(b + 64u * half + l, 2u);
  let ql1 = span(b + 64u * half + 32u + l, 2u);
  let qh = span(b + 128u + 32u * half + l, 2u);
  let sc = span(b + 192u + 8u * half, 2u);
  for (var i = 0u; i < 2u; i++) {
    r.q[i] = ql0[i];
    r.q[2u + i] = ql1[i];
    r.q[4u + i] = qh[i];
  }
  r.h = vec4<u32>(half_at(b + 208u), sc[0], sc[1], 0u);
  return r;
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  let d = unpack2x16float(r.h.x).x;
  for (var c = 0u; c < 4u; c++) {
    let sb = ((s & 3u) >> 1u) + 2u * c;
    let sc = d * f32(bitcast<i32>(byte_of(r.h, 4u + sb) << 24u) >> 24u);
    for (var i = 0u; i < 2u; i++) {
      let ql = r.q[i + 2u * (c & 1u)];
      let nib = select(nib_lo(ql), nib_hi(ql), c >= 2u);
      v[2u * c + i] = sc * (nib + 16.0 * bits_each(r.q[4u + i], 2u * c, 3u) - 32.0);
    }
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 128u * (s >> 2u) + 8u * (s & 3u) + 32u * (g >> 1u) + 4u * (g & 1u);
}
