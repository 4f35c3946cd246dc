// Element i of a float tensor bound as u32 words, its element type chosen per pipeline by the
// override WEIGHT_DTYPE (0 f32, 1 f16, 2 bf16; src/gpu/dtype.ts DTYPE_CODE). The caller reads the
// word, `w[float_word(i)]`, from its own binding, and `float_elem` takes element i out of it.
//! import lib/halves

override WEIGHT_DTYPE: u32 = 1u;

// The word holding element i.
fn float_word(i: u32) -> u32 {
  return select(i >> 1u, i, WEIGHT_DTYPE == 0u);
}

// The two 16-bit elements of a word (F16 or BF16 only).
fn float_pair(word: u32) -> vec2<f32> {
  return select(bf16_pair(word), f16_pair(word), WEIGHT_DTYPE == 1u);
}

// Element i, from the word `float_word(i)` names.
fn float_elem(word: u32, i: u32) -> f32 {
  if (WEIGHT_DTYPE == 0u) {
    return bitcast<f32>(word);
  }
  return float_pair(word)[i & 1u];
}
