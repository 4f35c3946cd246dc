// MXFP4 (ggml type 39), OCP Microscaling FP4: 17-byte blocks of 32 weights, so a block starts at
// any byte. An E8M0 exponent byte e at 0, 16 bytes of 4-bit E2M1 codes at 1 (element i < 16 the
// low nibble of byte i, i + 16 its high nibble). Weight = 2^(e - 127) * e2m1(code), computed here
// as 2^(e - 128) * (2 * e2m1(code)), which is exact in f32. A slice is the whole block.
//! import lib/quant_words

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 17u;

fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  r.h.x = byte_at(b);
  // The 16 code bytes at b + 1 from 5 aligned words (clamped at the end of the buffer; a word
  // past it is never needed when the bytes are word-aligned).
  let o = b + 1u;
  let sh = 8u * (o & 3u);
  let last = arrayLength(&w) - 1u;
  var a: array<u32, 5>;
  for (var i = 0u; i < 5u; i++) {
    a[i] = w[min((o >> 2u) + i, last)];
  }
  for (var i = 0u; i < 4u; i++) {
    r.q[i] = select(a[i], (a[i] >> sh) | (a[i + 1u] << (32u - sh)), sh != 0u);
  }
  return r;
}

// Twice the E2M1 value of each code (4 bits at bit `shift` of each byte of v): sign bit 3,
// exponent bits 1..2, mantissa bit 0; 2|value| = m for exponent 0, (2 + m) << (exponent - 1)
// otherwise.
fn mxfp4_codes(v: u32, shift: u32) -> vec4<f32> {
  let c = (vec4<u32>(v) >> (vec4<u32>(0u, 8u, 16u, 24u) + shift)) & vec4<u32>(15u);
  let e = (c >> vec4<u32>(1u)) & vec4<u32>(3u);
  let m = c & vec4<u32>(1u);
  let mag = vec4<f32>(select(m, (m + 2u) << (max(e, vec4<u32>(1u)) - 1u), e != vec4<u32>(0u)));
  return select(mag, -mag, (c & vec4<u32>(8u)) != vec4<u32>(0u));
}

fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  let d = ldexp(1.0, i32(r.h.x) - 128);
  var v: array<vec4<f32>, 8>;
  for (var i = 0u; i < 4u; i++) {
    v[i] = d * mxfp4_codes(r.q[i], 0u);
    v[4u + i] = d * mxfp4_codes(r.q[i], 4u);
  }
  return v;
}

fn group_elem(s: u32, g: u32) -> u32 {
  return 4u * g;
}
