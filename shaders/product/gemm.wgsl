// Tiled product over GGUF block-quantized weights, for prefill. Composed per weight format like
// product/matvec.wgsl (src/gpu/shader_compose.ts): the variant `product/gemm:format=<fragment>`
// imports the format's decoder shaders/formats/<fragment>.wgsl and uses only its contract
// (BLOCK_ELEMS, BLOCK_BYTES, load_slice, decode, group_elem; src/gpu/formats/format.ts), so every
// format, float or block-quantized, works here with no code of its own.
//! import formats/{format}
//! import product/params
//! import product/epilogue
//
//   r[m, j] = s[m] * sum_k x[m, k] * g[k] * W[j, k] + b[y0 + j],   y[m * ldy + y0 + j] = r
//
// with the same fused work as product/matvec.wgsl's `main`: RMSNorm of x folded in (flag bit 1: g is
// the norm weight, s[m] = 1/sqrt(mean(x[m]^2) + eps)), bias (bit 0), y += r (bit 2, the residual
// add), or GATED over stacked [gate; up] rows, y = act(r(j)) * r(n + j). The matrix-vector
// kernel decodes the weights once per 8 activation rows; these decode them once per tile of
// many rows. Two entry points, one per kind of adapter:
//
// - `main` (GPUs): a workgroup of NT = WG_N * WG_M threads computes BN = TN * WG_N output
//   columns (weight rows) of BM = TM * WG_M activation rows; thread (tn, tm) = (lid % WG_N,
//   lid / WG_N) owns columns tn + c * WG_N (c < TN) of rows tm + i * WG_M (i < TM). K is stepped
//   BK elements at a time, whole blocks (the slices of a block cover it in an order only the
//   format knows). Each step the workgroup decodes the slices of its BN weight rows (2 BN with
//   GATED) once, into workgroup memory as f32 rows of BK / 4 vec4 (+ PAD), multiplied by g
//   when norm is on; then every thread dots its activation rows, read from x, with the staged
//   rows. Rows past m or n read row m - 1 or n - 1 and are never stored.
// - `rows` (CPU adapters, below): no workgroup memory, whose every read is a per-invocation load
//   there even at a uniform address; each thread decodes its own weight rows' slices into
//   registers once per RB activation rows.

override WG_N: u32 = 1u;
override WG_M: u32 = 64u;
override TN: u32 = 16u; // 1..MAX_TN
override TM: u32 = 1u; // 1..MAX_TM
override BK: u32 = 256u; // a multiple of BLOCK_ELEMS (and so of 32)
override PAD: u32 = 0u; // vec4 of padding per staged row
override GATED: bool = false;

const MAX_TN: u32 = 16u;
const MAX_TM: u32 = 4u;

// Derived from the above (not meant to be set by the host).
override NT: u32 = WG_N * WG_M;
override BN: u32 = TN * WG_N;
override WROWS: u32 = BN * (1u + u32(GATED));
override KV: u32 = BK / 4u; // vec4 per staged row
override SK: u32 = KV + PAD; // staged row stride in vec4

// Params and bindings 0 to 5: product/params.

// The step's decoded weight rows: gate rows [0, BN), up rows [BN, 2 BN) with GATED.
var<workgroup> wt: array<vec4<f32>, WROWS * SK>;

// Decode the slices of k-step [k0, k0 + BK) of the staged rows into `wt`, the work spread over
// the workgroup (consecutive threads take consecutive slices of a row).
fn stage(n0: u32, k0: u32, lid: u32, norm: bool) {
  let per = BLOCK_ELEMS / 32u;
  let ks = BK / 32u;
  let slices = p.k / 32u;
  let row_bytes = (p.k / BLOCK_ELEMS) * BLOCK_BYTES;
  let j0 = k0 / 32u;
  let tasks = WROWS * ks;
  for (var u0 = 0u; u0 < tasks; u0 += NT) {
    // Every thread decodes (a clamped slice when it has none), so the loads are not under
    // divergent control flow; only the stores are.
    let u = min(u0 + lid, tasks - 1u);
    let r = u / ks;
    let j = min(j0 + u % ks, slices - 1u);
    let row = min(n0 + r % BN, p.n - 1u) + select(0u, p.n, r >= BN);
    let s = j % per;
    let blk = j / per;
    let v = decode(load_slice(row * row_bytes + blk * BLOCK_BYTES, s), s);
    let e0 = blk * BLOCK_ELEMS - k0;
    if (u0 + lid < tasks && j0 + u % ks < slices) {
      for (var g = 0u; g < 8u; g++) {
        let e = (e0 + group_elem(s, g)) / 4u;
        var vg = v[g];
        if (norm) {
          vg *= gamma[k0 / 4u + e];
        }
        wt[r * SK + e] = vg;
      }
    }
  }
}

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let n0 = wid.x * BN;
  let m0 = wid.y * TM * WG_M;
  let norm = (p.flags & 2u) != 0u;
  let tn = lid % WG_N;
  let tm = lid / WG_N;
  let kx = p.k / 4u;
  var xrow: array<u32, MAX_TM>;
  for (var i = 0u; i < TM; i++) {
    xrow[i] = min(m0 + tm + i * WG_M, p.m - 1u) * kx;
  }
  var acc: array<array<f32, MAX_TN>, MAX_TM>;
  var acc2: array<array<f32, MAX_TN>, MAX_TM>; // GATED: the up rows
  var ss: array<f32, MAX_TM>; // norm: sums of squares of this thread's rows of x
  for (var k0 = 0u; k0 < p.k; k0 += BK) {
    stage(n0, k0, lid, norm);
    workgroupBarrier();
    let c0 = k0 / 4u;
    let kv = min(KV, kx - c0);
    for (var c = 0u; c < kv; c++) {
      var xv: array<vec4<f32>, MAX_TM>;
      for (var i = 0u; i < TM; i++) {
        xv[i] = x[xrow[i] + c0 + c];
        if (norm) {
          ss[i] += dot(xv[i], xv[i]);
        }
      }
      for (var j = 0u; j < TN; j++) {
        let wv = wt[(tn + j * WG_N) * SK + c];
        for (var i = 0u; i < TM; i++) {
          acc[i][j] += dot(xv[i], wv);
        }
        if (GATED) {
          let uv = wt[(BN + tn + j * WG_N) * SK + c];
          for (var i = 0u; i < TM; i++) {
            acc2[i][j] += dot(xv[i], uv);
          }
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < TM; i++) {
    let m = m0 + tm + i * WG_M;
    if (m >= p.m) {
      break;
    }
    var scale = 1.0;
    if (norm) {
      scale = inverseSqrt(ss[i] / f32(p.k) + p.eps);
    }
    for (var j = 0u; j < TN; j++) {
      let n = n0 + tn + j * WG_N;
      if (n >= p.n) {
        break;
      }
      finish(m, n, acc[i][j] * scale, acc2[i][j] * scale);
    }
  }
}

// `rows`: thread t of workgroup (wx, wy) owns weight rows (wx * NT + t) * RPT + i (i < RPT) and
// activation rows wy * RB + r (r < RB). Slice by slice, it decodes its RPT rows' slices into
// registers, then for each activation row loads the slice's 32 activations (the same addresses
// in every thread: uniform loads, each serving RPT weight rows) and dots them with the RPT
// decoded slices. On lavapipe (bench/results/gemm-quant-lavapipe.json) this does 512 rows 2.6 to
// 4.3 times as fast as the matrix-vector kernel; staging in workgroup memory (`main`) was
// slower than the matrix-vector kernel there. Weight rows past n read row n - 1 and are never
// stored.
override RPT: u32 = 8u; // 1..MAX_RPT
override RB: u32 = 32u; // 1..MAX_RB

const MAX_RPT: u32 = 8u;
const MAX_RB: u32 = 32u;

@compute @workgroup_size(NT)
fn rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let n0 = (wid.x * NT + lid) * RPT;
  let m0 = wid.y * RB;
  let per = BLOCK_ELEMS / 32u;
  let slices = p.k / 32u;
  let row_bytes = (p.k / BLOCK_ELEMS) * BLOCK_BYTES;
  let norm = (p.flags & 2u) != 0u;
  var base: array<u32, MAX_RPT>;
  for (var i = 0u; i < RPT; i++) {
    base[i] = min(n0 + i, p.n - 1u) * row_bytes;
  }
  let up = p.n * row_bytes;
  let rb = min(RB, p.m - m0); // the last workgroup row may have fewer
  var acc: array<array<f32, MAX_RB>, MAX_RPT>;
  var acc2: array<array<f32, MAX_RB>, MAX_RPT>; // GATED: the up rows
  var ss: array<f32, MAX_RB>;
  for (var j = 0u; j < slices; j++) {
    let s = j % per;
    let off = (j / per) * BLOCK_BYTES;
    let e0 = (j / per) * BLOCK_ELEMS;
    var v: array<array<vec4<f32>, 8>, MAX_RPT>;
    var v2: array<array<vec4<f32>, 8>, MAX_RPT>;
    for (var i = 0u; i < RPT; i++) {
      v[i] = decode(load_slice(base[i] + off, s), s);
      if (GATED) {
        v2[i] = decode(load_slice(base[i] + up + off, s), s);
      }
    }
    var g: array<vec4<f32>, 8>;
    if (norm) {
      for (var q = 0u; q < 8u; q++) {
        g[q] = gamma[(e0 + group_elem(s, q)) / 4u];
      }
    }
    for (var r = 0u; r < rb; r++) {
      let xr = (m0 + r) * p.k + e0;
      var xs: array<vec4<f32>, 8>;
      for (var q = 0u; q < 8u; q++) {
        let xv = x[(xr + group_elem(s, q)) / 4u];
        if (norm) {
          ss[r] += dot(xv, xv);
          xs[q] = xv * g[q];
        } else {
          xs[q] = xv;
        }
      }
      for (var i = 0u; i < RPT; i++) {
        acc[i][r] += dot8(v[i], xs);
        if (GATED) {
          acc2[i][r] += dot8(v2[i], xs);
        }
      }
    }
  }
  for (var i = 0u; i < RPT; i++) {
    let n = n0 + i;
    if (n >= p.n) {
      break;
    }
    for (var r = 0u; r < rb; r++) {
      let m = m0 + r;
      var scale = 1.0;
      if (norm) {
        scale = inverseSqrt(ss[r] / f32(p.k) + p.eps);
      }
      finish(m, n, acc[i][r] * scale, acc2[i][r] * scale);
    }
  }
}
