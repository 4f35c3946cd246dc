// Sign bits of the i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S): a set bit j makes weight j
// negative. Needs `bits_each` (lib/quant_words), which the importing fragment has.

// ±1 for 4 weights from sign bits 0..3 of `bits`.
fn iq_signs(bits: u32) -> vec4<f32> {
  let neg = (vec4<u32>(bits) & vec4<u32>(1u, 2u, 4u, 8u)) != vec4<u32>(0u);
  return select(vec4<f32>(1.0), vec4<f32>(-1.0), neg);
}

// 4 weights: scale `db` times the 4 grid bytes of `word`, signed by bits 0..3 of `signs`.
fn iq_run(db: f32, word: u32, signs: u32) -> vec4<f32> {
  return db * bits_each(word, 0u, 255u) * iq_signs(signs);
}

// The 8 sign bits of a 7-bit sign code (IQ2_XXS, IQ2_XS, IQ3_XXS): the eighth is the parity of the
// seven.
fn iq_code_signs(code: u32) -> u32 {
  return code | ((countOneBits(code) & 1u) << 7u);
}

// The raw words every i-quant slice starts from: the block's f16 d (at byte `b`) in h.x, and the
// two words at byte `qs` in q[0], q[1]. Needs lib/quant_words.
fn iq_raw(b: u32, qs: u32) -> Raw {
  var r: Raw;
  r.h.x = half_at(b);
  let q = span(qs, 2u);
  r.q[0] = q[0];
  r.q[1] = q[1];
  return r;
}
