// Matrix-vector products against GGUF block-quantized weights, dequantized in registers:
// y[m, n] (+)= sum_k x[m, k] W[n, k] (+ b[n]) for up to 8 activation rows per z-slice (more rows
// take more z-slices, each decoding the weights again: the prefill fallback for now).
//
// W row n is k / BLOCK consecutive ggml blocks, stored byte for byte as in a GGUF file; the
// buffer is read as u32 words. Blocks of 34, 18 and 210 bytes are only 2-byte aligned, but every
// field of every format starts at an even byte offset, so `word_at` reads the 4 bytes at any even
// offset from one word or two (one word when the format's block size is a multiple of 4).
//
// Work unit: a "slice" of 32 weights whose quants fit in at most 8 words: a whole Q8_0/Q4_0/Q4_1
// block; for Q4_K and Q5_K half of a 64-weight chunk (16 nibble bytes giving 16 weights of each
// of its two sub-blocks); for Q6_K 8 positions of a 128-weight half, in each of its 4 groups.
// A workgroup of 256 threads computes 8 output rows, 32 threads per row, each thread issuing
// the loads of UNROLL slices before decoding any of them. FORMAT is fixed per pipeline, so the
// per-format branches below fold away at pipeline creation.

override FORMAT: u32 = 0u; // 0 Q8_0, 1 Q4_0, 2 Q4_1, 3 Q4_K, 4 Q5_K, 5 Q6_K
// Activation rows per z-slice (1..8), fixed per pipeline so the row loops have constant bounds.
override ROWS: u32 = 1u;
override HAS_BIAS: bool = false;
override ACCUMULATE: bool = false;

const TPR: u32 = 32u;
const RPW: u32 = 8u;
const MAX_M: u32 = 8u;
const UNROLL: u32 = 4u;

struct Params {
  m: u32,
  n: u32,
  k: u32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

var<workgroup> red: array<array<f32, MAX_M>, 256>;

fn block_elems() -> u32 {
  return select(32u, 256u, FORMAT >= 3u);
}

fn block_bytes() -> u32 {
  switch FORMAT {
    case 0u: { return 34u; }
    case 1u: { return 18u; }
    case 2u: { return 20u; }
    case 3u: { return 144u; }
    case 4u: { return 176u; }
    default: { return 210u; }
  }
}

// The 4 bytes starting at even byte offset `off` of the weights, little-endian.
fn word_at(off: u32) -> u32 {
  let i = off >> 2u;
  let lo = w[i];
  if (block_bytes() % 4u == 0u) {
    return lo;
  }
  // Clamped so the last word of the buffer never reads past it (the upper half is then unused).
  let hi = w[min(i + 1u, arrayLength(&w) - 1u)];
  return select(lo, (lo >> 16u) | (hi << 16u), (off & 2u) != 0u);
}

// Byte j of four words.
fn byte_of(v: vec4<u32>, j: u32) -> u32 {
  return (v[j >> 2u] >> (8u * (j & 3u))) & 0xffu;
}

fn nib_lo(v: u32) -> vec4<f32> {
  return vec4<f32>((vec4<u32>(v) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u));
}

fn nib_hi(v: u32) -> vec4<f32> {
  return vec4<f32>((vec4<u32>(v) >> vec4<u32>(4u, 12u, 20u, 28u)) & vec4<u32>(15u));
}

// Bits b..b+width-1 of each byte of v.
fn bits_each(v: u32, b: u32, mask: u32) -> vec4<f32> {
  return vec4<f32>((vec4<u32>(v) >> (vec4<u32>(0u, 8u, 16u, 24u) + b)) & vec4<u32>(mask));
}

fn i8x4(v: u32) -> vec4<f32> {
  return vec4<f32>(bitcast<vec4<i32>>(vec4<u32>(v) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}

// One slice's raw words: up to 8 words of quants and 4 words of block header and scales.
struct Raw {
  q: array<u32, 8>,
  h: vec4<u32>,
}

// Load slice `s` of the block at byte `b`.
fn load_slice(b: u32, s: u32) -> Raw {
  var r: Raw;
  switch FORMAT {
    case 0u: { // Q8_0: d at 0, int8 quants at 2
      r.h.x = word_at(b);
      for (var i = 0u; i < 8u; i++) {
        r.q[i] = word_at(b + 2u + 4u * i);
      }
    }
    case 1u, 2u: { // Q4_0: d at 0, nibbles at 2; Q4_1: d, m at 0, nibbles at 4
      r.h.x = word_at(b);
      let qs = b + select(2u, 4u, FORMAT == 2u);
      for (var i = 0u; i < 4u; i++) {
        r.q[i] = word_at(qs + 4u * i);
      }
    }
    case 3u, 4u: { // d, dmin at 0, scales at 4..15, (Q5_K: qh at 16), nibbles at 16 or 48
      r.h = vec4<u32>(word_at(b), word_at(b + 4u), word_at(b + 8u), word_at(b + 12u));
      let qs = b + select(16u, 48u, FORMAT == 4u) + 32u * (s >> 1u) + 16u * (s & 1u);
      for (var i = 0u; i < 4u; i++) {
        r.q[i] = word_at(qs + 4u * i);
      }
      if (FORMAT == 4u) {
        for (var i = 0u; i < 4u; i++) {
          r.q[4u + i] = word_at(b + 16u + 16u * (s & 1u) + 4u * i);
        }
      }
    }
    default: { // Q6_K: ql at 0, qh at 128, int8 scales at 192, d at 208
      let half = s >> 2u;
      let l = 8u * (s & 3u);
      for (var i = 0u; i < 2u; i++) {
        r.q[i] = word_at(b + 64u * half + l + 4u * i);
        r.q[2u + i] = word_at(b + 64u * half + 32u + l + 4u * i);
        r.q[4u + i] = word_at(b + 128u + 32u * half + l + 4u * i);
      }
      r.h = vec4<u32>(word_at(b + 206u), word_at(b + 192u + 8u * half),
                      word_at(b + 196u + 8u * half), 0u);
    }
  }
  return r;
}

// Q4_K/Q5_K 6-bit (scale, min) of sub-block j; the 12 scale bytes are bytes 4..15 of h.
fn scale_min(h: vec4<u32>, j: u32) -> vec2<f32> {
  let lo = vec2<u32>(byte_of(h, 4u + j) & 63u, byte_of(h, 8u + j) & 63u);
  let c = byte_of(h, 8u + j);
  let hi = vec2<u32>((c & 15u) | ((byte_of(h, j) >> 6u) << 4u),
                     (c >> 4u) | ((byte_of(h, 4u + j) >> 6u) << 4u));
  return vec2<f32>(select(hi, lo, j < 4u));
}

// The 32 weights of slice `s`, as 8 groups of 4 consecutive elements (see group_elem).
fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> {
  var v: array<vec4<f32>, 8>;
  switch FORMAT {
    case 0u: {
      let d = unpack2x16float(r.h.x).x;
      for (var i = 0u; i < 8u; i++) {
        v[i] = d * i8x4(r.q[i]);
      }
    }
    case 1u, 2u: {
      // Q4_0: d·(q − 8); Q4_1: d·q + m.
      let dm = unpack2x16float(r.h.x);
      let offset = select(-8.0 * dm.x, dm.y, FORMAT == 2u);
      for (var i = 0u; i < 4u; i++) {
        v[i] = dm.x * nib_lo(r.q[i]) + offset;
        v[4u + i] = dm.x * nib_hi(r.q[i]) + offset;
      }
    }
    case 3u, 4u: {
      let dm = unpack2x16float(r.h.x);
      let j = 2u * (s >> 1u);
      let a = scale_min(r.h, j);
      let b = scale_min(r.h, j + 1u);
      for (var i = 0u; i < 4u; i++) {
        var lo = nib_lo(r.q[i]);
        var hi = nib_hi(r.q[i]);
        if (FORMAT == 4u) {
          lo += 16.0 * bits_each(r.q[4u + i], j, 1u);
          hi += 16.0 * bits_each(r.q[4u + i], j + 1u, 1u);
        }
        v[i] = (dm.x * a.x) * lo - dm.y * a.y;
        v[4u + i] = (dm.x * b.x) * hi - dm.y * b.y;
      }
    }
    default: {
      let d = unpack2x16float(r.h.x).y;
      for (var c = 0u; c < 4u; c++) {
        let sb = ((s & 3u) >> 1u) + 2u * c;
        let sc = d * f32(bitcast<i32>(byte_of(r.h, 4u + sb) << 24u) >> 24u);
        for (var i = 0u; i < 2u; i++) {
          let ql = r.q[i + 2u * (c & 1u)];
          let nib = select(nib_lo(ql), nib_hi(ql), c >= 2u);
          v[2u * c + i] = sc * (nib + 16.0 * bits_each(r.q[4u + i], 2u * c, 3u) - 32.0);
        }
      }
    }
  }
  return v;
}

// Element offset within its block of group g (4 weights) of slice s.
fn group_elem(s: u32, g: u32) -> u32 {
  switch FORMAT {
    case 3u, 4u: { return 64u * (s >> 1u) + 16u * (s & 1u) + 32u * (g >> 2u) + 4u * (g & 3u); }
    case 5u: { return 128u * (s >> 2u) + 8u * (s & 3u) + 32u * (g >> 1u) + 4u * (g & 1u); }
    default: { return 4u * g; }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = lid % TPR;
  let n = (wid.x + wid.y * nwg.x) * RPW + lid / TPR;
  let m0 = wid.z * ROWS;
  let per = block_elems() / 32u;
  let slices = p.k / 32u;
  var acc: array<f32, MAX_M>;
  if (n < p.n) {
    let row = n * (p.k / block_elems()) * block_bytes();
    var j = t;
    loop {
      if (j >= slices) {
        break;
      }
      // Issue the loads of up to UNROLL slices before decoding any.
      var raw: array<Raw, UNROLL>;
      for (var u = 0u; u < UNROLL; u++) {
        let ju = j + u * TPR;
        if (ju < slices) {
          raw[u] = load_slice(row + (ju / per) * block_bytes(), ju % per);
        }
      }
      for (var u = 0u; u < UNROLL; u++) {
        let ju = j + u * TPR;
        if (ju < slices) {
          let s = ju % per;
          let v = decode(raw[u], s);
          let base = (ju / per) * block_elems();
          for (var r = 0u; r < MAX_M; r++) {
            if (r < ROWS && m0 + r < p.m) {
              let xb = ((m0 + r) * p.k + base) / 4u;
              var sum = 0.0;
              for (var g = 0u; g < 8u; g++) {
                sum += dot(v[g], x[xb + group_elem(s, g) / 4u]);
              }
              acc[r] += sum;
            }
          }
        }
      }
      j += UNROLL * TPR;
    }
  }
  for (var r = 0u; r < MAX_M; r++) {
    if (r < ROWS) {
      red[lid][r] = acc[r];
    }
  }
  workgroupBarrier();
  for (var s = TPR / 2u; s > 0u; s >>= 1u) {
    if (t < s) {
      for (var r = 0u; r < MAX_M; r++) {
        if (r < ROWS) {
          red[lid][r] += red[lid + s][r];
        }
      }
    }
    workgroupBarrier();
  }
  if (n < p.n && t < ROWS && m0 + t < p.m) {
    let i = (m0 + t) * p.n + n;
    var out = red[lid - t][t];
    if (HAS_BIAS) {
      out += bias[n];
    }
    if (ACCUMULATE) {
      out += y[i];
    }
    y[i] = out;
  }
}
