// GGUF block-quantized weights, dequantized in registers. Two kernels share the block decoders
// below (WGSL has no includes), so both live in this file:
//
// - `main`: matrix-vector products for decode, with the work around them fused in,
//
//     r[m, j] = s[m] * sum_k x[m, k] * g[k] * W[j, k] + b[y0 + j],   y[m * ldy + y0 + j] = r
//
//   for up to 8 activation rows per z-slice (more rows take more z-slices, each decoding the
//   weights again: the prefill fallback for now).
//   - norm (flag): RMSNorm of x folded in: g is the norm weight (f32) and s[m] = 1/sqrt(mean(x[m]^2) +
//     eps). The threads of an output row read all of x[m] between them, so the sum of squares
//     comes out of the product's own loop; with several threads per row it is reduced alongside
//     the first product's sums, by the first row-group of the workgroup only.
//   - Epilogue: y = r, or with the accumulate flag y += r (the residual add); or with SWIGLU over
//     two weight rows, y = silu(r(j)) * r(n + j), W = [gate; up] stacked ([2n, k]); no bias.
//   - The bias, norm and accumulate choices are uniform flags (bits 0, 1, 2 of `flags`), not
//     override constants: they cost a uniform branch per slice, and every pipeline compiled is
//     seconds on a CPU adapter, so one pipeline serves all of them.
//   - TPR threads share an output row (a power of two up to 64; a workgroup of 256 computes
//     256 / TPR rows), reducing through workgroup memory. TPR = 1 is the CPU-adapter path: a
//     workgroup of 64 threads, each owning RPT whole output rows, so there is no reduction and no
//     barrier, and every load of x (the same for every thread) serves RPT weight rows.
// - `embed`: token embedding gather from a chunk of a quantized table (rows [row_start,
//   row_end) of [vocab, k]): one thread per 32-weight slice of an output row.
//
// W row j is k / BLOCK consecutive ggml blocks, stored byte for byte as in a GGUF file; the
// buffer is read as u32 words. Blocks of 34, 18, 22 and 210 bytes are only 2-byte aligned, but every
// field of every format starts at an even byte offset, so `word_at` reads the 4 bytes at any even
// offset from one word or two (one word when the format's block size is a multiple of 4).
//
// Work unit: a "slice" of 32 weights whose quants fit in at most 8 words: a whole Q8_0, Q4_0,
// Q4_1, Q5_0, Q5_1 (fifth bits in a header word) or IQ4_NL block; for Q4_K and Q5_K half of a 64-weight chunk (16 nibble bytes giving 16 weights of each
// of its two sub-blocks); for Q6_K 8 positions of a 128-weight half, in each of its 4 groups.
// On the GPU path a thread issues the loads of several slices before decoding any of them.
// FORMAT is fixed per pipeline, so the per-format branches below fold away.

override FORMAT: u32 = 0u; // 0 Q8_0, 1 Q4_0, 2 Q4_1, 3 Q4_K, 4 Q5_K, 5 Q6_K, 6 Q5_0, 7 Q5_1, 8 IQ4_NL
// Activation rows per z-slice (1..8), fixed per pipeline so the row loops have constant bounds.
override ROWS: u32 = 1u;
// IQ4_NL's 16 signed levels as int8 bytes, level q in byte q % 4 of word q / 4 (set from
// `src/gpu/quant/iq4_nl_values.ts` for FORMAT 8 only).
override IQ4_NL_0: u32 = 0u;
override IQ4_NL_1: u32 = 0u;
override IQ4_NL_2: u32 = 0u;
override IQ4_NL_3: u32 = 0u;
override SWIGLU: bool = false;
override TPR: u32 = 32u;
override WG: u32 = 256u;
override RPT: u32 = 1u; // 1..8

const MAX_M: u32 = 8u;
const MAX_RPT: u32 = 8u;
// Raw slices loaded before decoding (several threads per row only): LOADS / ROWS positions along
// k, at least one; several activation rows already give each load more work.
const LOADS: u32 = 4u;
const MAX_LOADS: u32 = 8u;
const EMBED_WG: u32 = 64u;

// Shared by both entry points. `main`: m, n, k, eps, ldy, y0, flags. `embed`: m tokens of k weights,
// table rows [row_start, row_end) of `vocab`.
struct Params {
  m: u32,
  n: u32,
  k: u32,
  eps: f32,
  ldy: u32,
  y0: u32,
  row_start: u32,
  row_end: u32,
  vocab: u32,
  flags: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> gamma: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> ids: array<u32>;

// Partial sums of each thread (TPR > 1), and of the first row-group's sums of squares.
var<workgroup> red: array<f32, 256u * MAX_M>;
var<workgroup> red_ss: array<f32, 64u * MAX_M>;
// The reduced sums of squares (norm), set by the first row_sum.
var<private> ss_total: array<f32, MAX_M>;

fn block_elems() -> u32 {
  return select(32u, 256u, FORMAT >= 3u && FORMAT <= 5u);
}

fn block_bytes() -> u32 {
  switch FORMAT {
    case 0u: { return 34u; }
    case 1u, 8u: { return 18u; }
    case 2u: { return 20u; }
    case 3u: { return 144u; }
    case 4u: { return 176u; }
    case 6u: { return 22u; }
    case 7u: { return 24u; }
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

// The 16 bits at even byte offset `off`, in the low half: one load.
fn half_at(off: u32) -> u32 {
  return (w[off >> 2u] >> (8u * (off & 2u))) & 0xffffu;
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

// IQ4_NL's levels of the nibbles at bit `shift` (0 or 4) of each byte of v.
fn iq4nl(v: u32, shift: u32) -> vec4<f32> {
  let levels = vec4<u32>(IQ4_NL_0, IQ4_NL_1, IQ4_NL_2, IQ4_NL_3);
  let q = (vec4<u32>(v) >> (vec4<u32>(0u, 8u, 16u, 24u) + shift)) & vec4<u32>(15u);
  let b = vec4<u32>(byte_of(levels, q.x), byte_of(levels, q.y), byte_of(levels, q.z),
                    byte_of(levels, q.w));
  return vec4<f32>(bitcast<vec4<i32>>(b << vec4<u32>(24u)) >> vec4<u32>(24u));
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
      r.h.x = half_at(b);
      r.q = span(b + 2u, 8u);
    }
    case 1u, 8u: { // Q4_0, IQ4_NL: d at 0, nibbles at 2
      r.h.x = half_at(b);
      let q = span(b + 2u, 4u);
      for (var i = 0u; i < 4u; i++) {
        r.q[i] = q[i];
      }
    }
    case 2u: { // Q4_1: d, m at 0, nibbles at 4 (20-byte blocks: every field word-aligned)
      r.h.x = word_at(b);
      for (var i = 0u; i < 4u; i++) {
        r.q[i] = word_at(b + 4u + 4u * i);
      }
    }
    case 6u: { // Q5_0: d at 0, fifth bits (u32) at 2, nibbles at 6
      r.h.x = half_at(b);
      r.h.y = word_at(b + 2u);
      let q = span(b + 6u, 4u);
      for (var i = 0u; i < 4u; i++) {
        r.q[i] = q[i];
      }
    }
    case 7u: { // Q5_1: d, m at 0, fifth bits at 4, nibbles at 8 (24-byte blocks: word-aligned)
      r.h.x = word_at(b);
      r.h.y = word_at(b + 4u);
      for (var i = 0u; i < 4u; i++) {
        r.q[i] = word_at(b + 8u + 4u * i);
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
    case 6u, 7u: {
      // Q5_0: d·(q − 16); Q5_1: d·q + m; bit e of the u32 in h.y is element e's fifth bit.
      let dm = unpack2x16float(r.h.x);
      let offset = select(-16.0 * dm.x, dm.y, FORMAT == 7u);
      let lanes = vec4<u32>(0u, 1u, 2u, 3u);
      for (var i = 0u; i < 4u; i++) {
        let lo = nib_lo(r.q[i]) + 16.0 * vec4<f32>((vec4<u32>(r.h.y) >> (lanes + 4u * i)) & vec4<u32>(1u));
        let hi = nib_hi(r.q[i]) + 16.0 * vec4<f32>((vec4<u32>(r.h.y) >> (lanes + 16u + 4u * i)) & vec4<u32>(1u));
        v[i] = dm.x * lo + offset;
        v[4u + i] = dm.x * hi + offset;
      }
    }
    case 8u: {
      let d = unpack2x16float(r.h.x).x;
      for (var i = 0u; i < 4u; i++) {
        v[i] = d * iq4nl(r.q[i], 0u);
        v[4u + i] = d * iq4nl(r.q[i], 4u);
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

// Sum `v` over the TPR threads of each output row; every thread of the row gets the sums. With
// `with_ss`, the first row-group's sums of squares `ss` are reduced in the same rounds into
// `ss_total` (every row-group reads all of x, so one of them suffices).
fn row_sum(v: array<f32, MAX_M>, ss: array<f32, MAX_M>, with_ss: bool, lid: u32, t: u32)
    -> array<f32, MAX_M> {
  if (TPR == 1u) {
    if (with_ss) {
      ss_total = ss;
    }
    return v;
  }
  var out = v;
  for (var r = 0u; r < ROWS; r++) {
    red[lid * MAX_M + r] = v[r];
    if (with_ss && lid < TPR) {
      red_ss[lid * MAX_M + r] = ss[r];
    }
  }
  workgroupBarrier();
  for (var s = TPR / 2u; s > 0u; s >>= 1u) {
    if (t < s) {
      for (var r = 0u; r < ROWS; r++) {
        red[lid * MAX_M + r] += red[(lid + s) * MAX_M + r];
        if (with_ss && lid < s) {
          red_ss[lid * MAX_M + r] += red_ss[(lid + s) * MAX_M + r];
        }
      }
    }
    workgroupBarrier();
  }
  for (var r = 0u; r < ROWS; r++) {
    out[r] = red[(lid - t) * MAX_M + r];
    if (with_ss) {
      ss_total[r] = red_ss[r];
    }
  }
  workgroupBarrier(); // `red` is reused by the next sum
  return out;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = lid % TPR;
  let n0 = ((wid.x + wid.y * nwg.x) * (WG / TPR) + lid / TPR) * RPT;
  let m0 = wid.z * ROWS;
  let per = block_elems() / 32u;
  let slices = p.k / 32u;
  let row_bytes = (p.k / block_elems()) * block_bytes();
  let positions = select(1u, max(1u, LOADS / ROWS), TPR > 1u);
  var acc: array<array<f32, MAX_M>, MAX_RPT>;
  var acc2: array<array<f32, MAX_M>, MAX_RPT>; // SWIGLU: the up rows
  var ss: array<f32, MAX_M>; // norm: this thread's sums of squares of x
  let has_bias = (p.flags & 1u) != 0u;
  let norm = (p.flags & 2u) != 0u;
  let accumulate = (p.flags & 4u) != 0u;
  if (n0 < p.n) {
    // Rows past n (the last workgroup) read row n - 1; their results are never stored.
    var base: array<u32, MAX_RPT>;
    for (var i = 0u; i < RPT; i++) {
      base[i] = min(n0 + i, p.n - 1u) * row_bytes;
    }
    let up = p.n * row_bytes;
    var j = t;
    loop {
      if (j >= slices) {
        break;
      }
      // With several threads per row (a GPU), issue the loads of this round before decoding any
      // of them; one thread per row (a CPU adapter) loads each slice as it decodes it, which
      // keeps far less alive (and the shader's compile time, seconds there, down).
      var raw: array<Raw, MAX_LOADS>;
      var raw2: array<Raw, MAX_LOADS>;
      for (var u = 0u; u < positions; u++) {
        let ju = j + u * TPR;
        if (TPR > 1u && ju < slices) {
          let off = (ju / per) * block_bytes();
          for (var i = 0u; i < RPT; i++) {
            raw[u * RPT + i] = load_slice(base[i] + off, ju % per);
            if (SWIGLU) {
              raw2[u * RPT + i] = load_slice(base[i] + up + off, ju % per);
            }
          }
        }
      }
      for (var u = 0u; u < positions; u++) {
        let ju = j + u * TPR;
        if (ju < slices) {
          let s = ju % per;
          let e0 = (ju / per) * block_elems();
          // This slice's 32 activations of every row, normalised by g (s[m] comes at the end),
          // then each weight row's slice decoded and dotted with all of them: one load of x
          // serves RPT weight rows, and one decoded slice (two with SwiGLU) is live at a time.
          var g: array<vec4<f32>, 8>;
          if (norm) {
            for (var q = 0u; q < 8u; q++) {
              g[q] = gamma[(e0 + group_elem(s, q)) / 4u];
            }
          }
          var xs: array<array<vec4<f32>, 8>, MAX_M>;
          for (var r = 0u; r < ROWS; r++) {
            // Rows past m (the last z-slice) read row m - 1; their results are never stored.
            let xr = min(m0 + r, p.m - 1u) * p.k + e0;
            for (var q = 0u; q < 8u; q++) {
              let xv = x[(xr + group_elem(s, q)) / 4u];
              if (norm) {
                ss[r] += dot(xv, xv);
                xs[r][q] = xv * g[q];
              } else {
                xs[r][q] = xv;
              }
            }
          }
          let off = (ju / per) * block_bytes();
          for (var i = 0u; i < RPT; i++) {
            var ri = raw[u * RPT + i];
            if (TPR == 1u) {
              ri = load_slice(base[i] + off, s);
            }
            let v = decode(ri, s);
            for (var r = 0u; r < ROWS; r++) {
              var d = 0.0;
              for (var q = 0u; q < 8u; q++) {
                d += dot(v[q], xs[r][q]);
              }
              acc[i][r] += d;
            }
            if (SWIGLU) {
              var ri2 = raw2[u * RPT + i];
              if (TPR == 1u) {
                ri2 = load_slice(base[i] + up + off, s);
              }
              let v2 = decode(ri2, s);
              for (var r = 0u; r < ROWS; r++) {
                var d = 0.0;
                for (var q = 0u; q < 8u; q++) {
                  d += dot(v2[q], xs[r][q]);
                }
                acc2[i][r] += d;
              }
            }
          }
        }
      }
      j += positions * TPR;
    }
  }
  for (var i = 0u; i < RPT; i++) {
    acc[i] = row_sum(acc[i], ss, norm && i == 0u, lid, t);
    if (SWIGLU) {
      acc2[i] = row_sum(acc2[i], ss, false, lid, t);
    }
  }
  if (t != 0u) {
    return;
  }
  for (var i = 0u; i < RPT; i++) {
    let n = n0 + i;
    if (n >= p.n) {
      break;
    }
    for (var r = 0u; r < ROWS; r++) {
      let m = m0 + r;
      if (m < p.m) {
        var scale = 1.0;
        if (norm) {
          scale = inverseSqrt(ss_total[r] / f32(p.k) + p.eps);
        }
        let o = m * p.ldy + p.y0 + n;
        var v = acc[i][r] * scale;
        if (SWIGLU) {
          y[o] = v / (1.0 + exp(-v)) * (acc2[i][r] * scale);
        } else {
          if (has_bias) {
            v += bias[p.y0 + n];
          }
          if (accumulate) {
            v += y[o];
          }
          y[o] = v;
        }
      }
    }
  }
}

// out[tok, :] = the dequantized table row ids[tok] when this chunk holds it; zeros for an id past
// the vocabulary when this is the last chunk; untouched otherwise (another chunk writes it).
@compute @workgroup_size(EMBED_WG)
fn embed(@builtin(global_invocation_id) gid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
  let slices = p.k / 32u;
  let i = gid.x + gid.y * nwg.x * EMBED_WG;
  if (i >= p.m * slices) {
    return;
  }
  let tok = i / slices;
  let j = i % slices;
  let id = ids[tok];
  let per = block_elems() / 32u;
  let s = j % per;
  let e0 = tok * p.k + (j / per) * block_elems();
  if (id >= p.row_start && id < p.row_end) {
    let row = (id - p.row_start) * (p.k / block_elems()) * block_bytes();
    let v = decode(load_slice(row + (j / per) * block_bytes(), s), s);
    for (var q = 0u; q < 8u; q++) {
      let o = e0 + group_elem(s, q);
      for (var e = 0u; e < 4u; e++) {
        y[o + e] = v[q][e];
      }
    }
  } else if (id >= p.vocab && p.row_end == p.vocab) {
    for (var q = 0u; q < 8u; q++) {
      let o = e0 + group_elem(s, q);
      for (var e = 0u; e < 4u; e++) {
        y[o + e] = 0.0;
      }
    }
  }
}
