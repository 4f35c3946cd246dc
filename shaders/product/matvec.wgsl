// GGUF block-quantized weights, dequantized in registers. Composed per weight format
// (src/gpu/shader_compose.ts): the variant `product/matvec:format=<fragment>` imports the format's
// decoder shaders/formats/<fragment>.wgsl (BLOCK_ELEMS, BLOCK_BYTES, load_slice, decode, group_elem;
// the contract is src/gpu/formats/format.ts), which brings the weight readers it uses: every
// format, the float ones (F32, F16, BF16) as well as the GGUF blocks.
//! import formats/{format}
//! import product/params
//! import product/epilogue
//
// Two entry points share the decoder:
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
//   - Epilogue: y = r, or with the accumulate flag y += r (the residual add); or with GATED over
//     two weight rows, y = act(r(j)) * r(n + j) (SiLU or GELU-tanh, override ACT), W = [gate; up] stacked ([2n, k]); no bias.
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
// W row j is k / BLOCK_ELEMS consecutive ggml blocks, stored byte for byte as in a GGUF file
// (the binding `w` of lib/quant_words). Work unit: a "slice" of 32 weights of a block, as the
// format's fragment cuts it (8 runs of 4 consecutive elements, at most 8 words of quants). On the
// GPU path a thread issues the loads of several slices before decoding any of them.

// Activation rows per z-slice (1..8), fixed per pipeline so the row loops have constant bounds.
override ROWS: u32 = 1u;
override GATED: bool = false;
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

// Binding 6 (`embed` only): the token ids.
@group(0) @binding(6) var<storage, read> ids: array<u32>;

// Partial sums of each thread (TPR > 1), and of the first row-group's sums of squares.
var<workgroup> red: array<f32, 256u * MAX_M>;
var<workgroup> red_ss: array<f32, 64u * MAX_M>;
// The reduced sums of squares (norm), set by the first row_sum.
var<private> ss_total: array<f32, MAX_M>;

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
  let per = BLOCK_ELEMS / 32u;
  let slices = p.k / 32u;
  let row_bytes = (p.k / BLOCK_ELEMS) * BLOCK_BYTES;
  let positions = select(1u, max(1u, LOADS / ROWS), TPR > 1u);
  var acc: array<array<f32, MAX_M>, MAX_RPT>;
  var acc2: array<array<f32, MAX_M>, MAX_RPT>; // GATED: the up rows
  var ss: array<f32, MAX_M>; // norm: this thread's sums of squares of x
  let norm = (p.flags & 2u) != 0u;
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
          let off = (ju / per) * BLOCK_BYTES;
          for (var i = 0u; i < RPT; i++) {
            raw[u * RPT + i] = load_slice(base[i] + off, ju % per);
            if (GATED) {
              raw2[u * RPT + i] = load_slice(base[i] + up + off, ju % per);
            }
          }
        }
      }
      for (var u = 0u; u < positions; u++) {
        let ju = j + u * TPR;
        if (ju < slices) {
          let s = ju % per;
          let e0 = (ju / per) * BLOCK_ELEMS;
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
          let off = (ju / per) * BLOCK_BYTES;
          for (var i = 0u; i < RPT; i++) {
            var ri = raw[u * RPT + i];
            if (TPR == 1u) {
              ri = load_slice(base[i] + off, s);
            }
            let v = decode(ri, s);
            for (var r = 0u; r < ROWS; r++) {
              acc[i][r] += dot8(v, xs[r]);
            }
            if (GATED) {
              var ri2 = raw2[u * RPT + i];
              if (TPR == 1u) {
                ri2 = load_slice(base[i] + up + off, s);
              }
              let v2 = decode(ri2, s);
              for (var r = 0u; r < ROWS; r++) {
                acc2[i][r] += dot8(v2, xs[r]);
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
    if (GATED) {
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
        finish(m, n, acc[i][r] * scale, acc2[i][r] * scale);
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
  let per = BLOCK_ELEMS / 32u;
  let s = j % per;
  let e0 = tok * p.k + (j / per) * BLOCK_ELEMS;
  if (id >= p.row_start && id < p.row_end) {
    let row = (id - p.row_start) * (p.k / BLOCK_ELEMS) * BLOCK_BYTES;
    let v = decode(load_slice(row + (j / per) * BLOCK_BYTES, s), s);
    for (var q = 0u; q < 8u; q++) {
      let o = e0 + group_elem(s, q);
      for (var e = 0u; e < 4u; e++) {
        y[o + e] = v[q][e] * p.scale;
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
