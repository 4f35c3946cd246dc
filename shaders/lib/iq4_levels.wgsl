// The IQ4 non-linear levels (IQ4_NL and IQ4_XS share them): 16 int8 levels packed 4 to a word
// in the format's bound table (made from ggml's own dequantizer: src/gpu/formats/iq4_nl_values.ts).
// A slice carries the 4 words and picks a level with selects and a shift, which on lavapipe runs
// at Q8_0's speed where a table read per weight took 1.4x.

// The levels of the 4 nibbles at bit `shift` of each byte of v; t: the 4 packed table words.
fn iq4_levels(t: vec4<u32>, v: u32, shift: u32) -> vec4<f32> {
  let n = (vec4<u32>(v) >> (vec4<u32>(0u, 8u, 16u, 24u) + shift)) & vec4<u32>(15u);
  let b4 = (n & vec4<u32>(4u)) != vec4<u32>(0u);
  let word = select(select(vec4<u32>(t.x), vec4<u32>(t.y), b4),
                    select(vec4<u32>(t.z), vec4<u32>(t.w), b4),
                    (n & vec4<u32>(8u)) != vec4<u32>(0u));
  let byte_top = word << (vec4<u32>(24u) - 8u * (n & vec4<u32>(3u)));
  return vec4<f32>(bitcast<vec4<i32>>(byte_top) >> vec4<u32>(24u));
}

// A slice with its table words: `r` with the 4 words of the importing fragment's `grid` (binding 7)
// in q[4..7].
fn iq4_with_table(r: Raw) -> Raw {
  var o = r;
  for (var i = 0u; i < 4u; i++) {
    o.q[4u + i] = grid[i];
  }
  return o;
}

// The 32 weights of a sub-block scaled by `d`: its 16 nibble bytes in r.q[0..3] (element e < 16
// the low nibble of byte e, e + 16 its high nibble), the table words in r.q[4..7].
fn iq4_decode(r: Raw, d: f32) -> array<vec4<f32>, 8> {
  let t = vec4<u32>(r.q[4], r.q[5], r.q[6], r.q[7]);
  var v: array<vec4<f32>, 8>;
  for (var i = 0u; i < 4u; i++) {
    v[i] = d * iq4_levels(t, r.q[i], 0u);
    v[4u + i] = d * iq4_levels(t, r.q[i], 4u);
  }
  return v;
}
