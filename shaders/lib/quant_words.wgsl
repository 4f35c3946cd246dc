// Reading GGUF blocks out of the weight buffer, for the format fragments in shaders/formats/ (see
// src/gpu/formats/format.ts). The weights are the blocks exactly as a GGUF file stores them, read
// as u32 words. Blocks of 34, 18 or 210 bytes are only 2-byte aligned, so `word_at`, `half_at`
// and `span` take any even byte offset, `byte_at` any offset. Needs the fragment's BLOCK_BYTES.

@group(0) @binding(2) var<storage, read> w: array<u32>;

// One slice's raw words: up to 8 words of quants and 4 words of block header and scales.
struct Raw {
  q: array<u32, 8>,
  h: vec4<u32>,
}

// The 4 bytes starting at even byte offset `off` of the weights, little-endian.
fn word_at(off: u32) -> u32 {
  let i = off >> 2u;
  let lo = w[i];
  if (BLOCK_BYTES % 4u == 0u) {
    return lo;
  }
  // Clamped so the last word of the buffer never reads past it (the upper half is then unused).
  let hi = w[min(i + 1u, arrayLength(&w) - 1u)];
  return select(lo, (lo >> 16u) | (hi << 16u), (off & 2u) != 0u);
}

// The 16 bits at even byte offset `off`, in the low half: one load.
fn half_at(off: u32) -> u32 {
  return (w[off >> 2u] >> (8u * (off & 2u))) & 0xffffu;
}

// The byte at any offset `off`: one load.
fn byte_at(off: u32) -> u32 {
  return (w[off >> 2u] >> (8u * (off & 3u))) & 0xffu;
}

// The `n` (≤ 8) words starting at even byte offset `off`, from n + 1 aligned loads (`word_at`
// would take two loads a word).
fn span(off: u32, n: u32) -> array<u32, 8> {
  var a: array<u32, 9>;
  let i0 = off >> 2u;
  // Clamped so the last word of the buffer never reads past it (its upper half is then unused).
  let last = arrayLength(&w) - 1u;
  for (var i = 0u; i <= n; i++) {
    a[i] = w[min(i0 + i, last)];
  }
  let odd = (off & 2u) != 0u;
  var out: array<u32, 8>;
  for (var i = 0u; i < n; i++) {
    out[i] = select(a[i], (a[i] >> 16u) | (a[i + 1u] << 16u), odd);
  }
  return out;
}

// A slice of a "d, then quants" block (Q8_0, Q4_0, IQ4_NL): the f16 at byte `b` in h.x and the
// `n` words from byte b + 2 in q (the rest 0).
fn raw_d_words(b: u32, n: u32) -> Raw {
  var r: Raw;
  r.h.x = half_at(b);
  r.q = span(b + 2u, n);
  return r;
}

// Byte j of four words.
fn byte_of(v: vec4<u32>, j: u32) -> u32 {
  return (v[j >> 2u] >> (8u * (j & 3u))) & 0xffu;
}

// The low nibbles of the 4 bytes of v.
fn nib_lo(v: u32) -> vec4<f32> {
  return vec4<f32>((vec4<u32>(v) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u));
}

// The high nibbles of the 4 bytes of v.
fn nib_hi(v: u32) -> vec4<f32> {
  return vec4<f32>((vec4<u32>(v) >> vec4<u32>(4u, 12u, 20u, 28u)) & vec4<u32>(15u));
}

// Bits b.. of each byte of v, masked by `mask`.
fn bits_each(v: u32, b: u32, mask: u32) -> vec4<f32> {
  return vec4<f32>((vec4<u32>(v) >> (vec4<u32>(0u, 8u, 16u, 24u) + b)) & vec4<u32>(mask));
}

// The 4 bytes of v as signed int8.
fn i8x4(v: u32) -> vec4<f32> {
  return vec4<f32>(bitcast<vec4<i32>>(vec4<u32>(v) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}
