// Register-blocked matrix-matrix product for prefill:
//   y[m, n] = sum_k x[m, k] W[n, k] (+ b[n])      (ACCUMULATE: y[m, n] += the same)
// x f32 row-major [M, K]; W row-major [N, K] stored as F32, F16 or BF16 (read as u32 words and
// widened to f32 by lib/float_elems); b f32; y f32 [M, N]; f32 accumulation. The product
// kernels (product/matvec.wgsl, product/gemm.wgsl) take every float weight whose K is a multiple of
// 32; this kernel is the one for other shapes.
//! import lib/float_elems
//
// A workgroup of WG_N x WG_M threads computes a BM x BN output tile (BM = TM * WG_M, BN = 4 *
// WG_N); each thread keeps TM x 4 outputs in registers: rows ty + i * WG_M, columns tx + j * WG_N
// (strided, so neighbouring threads write neighbouring columns). K is stepped BK at a time: the
// x tile [BM, BK] and the W tile [BN, BK] are staged, widened to f32, in workgroup memory with
// rows of BK / 4 vec4 (+ PAD vec4 against bank conflicts), two barriers per K tile.
//
// Two entry points differ only in how tiles are loaded:
//   vec4:   16-byte loads; needs K % 4 == 0 (F32 weights) or K % 8 == 0 (F16, BF16).
//   scalar: one element per load, for any K.
// Edges (M, N not multiples of the tile, the last K tile) are guarded; padding loads are zeros.

override HAS_BIAS: bool = false;
override ACCUMULATE: bool = false;
override WG_N: u32 = 16u; // threads along n
override WG_M: u32 = 16u; // threads along m
override TM: u32 = 4u; // output rows per thread (1..MAX_TM)
override BK: u32 = 16u; // K per tile, a multiple of 8
override PAD: u32 = 1u; // vec4 of padding per staged row

const TN: u32 = 4u; // output columns per thread
const MAX_TM: u32 = 8u;

// Derived from the above (not meant to be set by the host).
override NT: u32 = WG_N * WG_M;
override BM: u32 = TM * WG_M;
override BN: u32 = TN * WG_N;
override KV: u32 = BK / 4u; // vec4 per staged row
override SK: u32 = KV + PAD; // staged row stride in vec4

struct Params {
  m: u32,
  n: u32,
  k: u32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// The same buffers seen two ways; each entry point uses one view (bindings are per entry point).
@group(0) @binding(1) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w4: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> x1: array<f32>;
@group(0) @binding(2) var<storage, read> w1: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

var<workgroup> xs: array<vec4<f32>, BM * SK>;
var<workgroup> ws: array<vec4<f32>, BN * SK>;

fn bias_at(n: u32) -> f32 {
  if (!HAS_BIAS) {
    return 0.0;
  }
  return bias[n];
}

// Weight element i of the flattened [N, K] tensor, through the scalar view.
fn weight1(i: u32) -> f32 {
  return float_elem(w1[float_word(i)], i);
}

// Stage x[m0.., k0..] and W[n0.., k0..] with 16-byte loads.
fn load_vec4(m0: u32, n0: u32, k0: u32, lid: u32) {
  let kx = p.k / 4u;
  for (var v = lid; v < BM * KV; v += NT) {
    let r = v / KV;
    let c = v % KV;
    let m = m0 + r;
    let kk = k0 + 4u * c;
    var xv = vec4<f32>();
    if (m < p.m && kk < p.k) {
      xv = x4[m * kx + kk / 4u];
    }
    xs[r * SK + c] = xv;
  }
  if (WEIGHT_DTYPE == 0u) {
    for (var v = lid; v < BN * KV; v += NT) {
      let r = v / KV;
      let c = v % KV;
      let n = n0 + r;
      let kk = k0 + 4u * c;
      var wv = vec4<u32>();
      if (n < p.n && kk < p.k) {
        wv = w4[n * kx + kk / 4u];
      }
      ws[r * SK + c] = bitcast<vec4<f32>>(wv);
    }
  } else {
    // Eight 16-bit weights per load.
    let kw = p.k / 8u;
    for (var v = lid; v < BN * (KV / 2u); v += NT) {
      let r = v / (KV / 2u);
      let c = v % (KV / 2u);
      let n = n0 + r;
      let kk = k0 + 8u * c;
      var wv = vec4<u32>();
      if (n < p.n && kk < p.k) {
        wv = w4[n * kw + kk / 8u];
      }
      ws[r * SK + 2u * c] = vec4<f32>(float_pair(wv.x), float_pair(wv.y));
      ws[r * SK + 2u * c + 1u] = vec4<f32>(float_pair(wv.z), float_pair(wv.w));
    }
  }
}

// Stage the same tiles one element per load (any K).
fn load_scalar(m0: u32, n0: u32, k0: u32, lid: u32) {
  for (var v = lid; v < BM * KV; v += NT) {
    let r = v / KV;
    let c = v % KV;
    let m = m0 + r;
    var xv = vec4<f32>();
    for (var e = 0u; e < 4u; e++) {
      let kk = k0 + 4u * c + e;
      if (m < p.m && kk < p.k) {
        xv[e] = x1[m * p.k + kk];
      }
    }
    xs[r * SK + c] = xv;
  }
  for (var v = lid; v < BN * KV; v += NT) {
    let r = v / KV;
    let c = v % KV;
    let n = n0 + r;
    var wv = vec4<f32>();
    for (var e = 0u; e < 4u; e++) {
      let kk = k0 + 4u * c + e;
      if (n < p.n && kk < p.k) {
        wv[e] = weight1(n * p.k + kk);
      }
    }
    ws[r * SK + c] = wv;
  }
}

// acc[i][j] += sum over the staged K tile of x[row i] * W[column j].
fn multiply(acc: ptr<function, array<vec4<f32>, MAX_TM>>, tx: u32, ty: u32) {
  for (var c = 0u; c < KV; c++) {
    let b0 = ws[tx * SK + c];
    let b1 = ws[(tx + WG_N) * SK + c];
    let b2 = ws[(tx + 2u * WG_N) * SK + c];
    let b3 = ws[(tx + 3u * WG_N) * SK + c];
    for (var i = 0u; i < TM; i++) {
      let a = xs[(ty + i * WG_M) * SK + c];
      (*acc)[i] += vec4<f32>(dot(a, b0), dot(a, b1), dot(a, b2), dot(a, b3));
    }
  }
}

fn store(acc: ptr<function, array<vec4<f32>, MAX_TM>>, m0: u32, n0: u32, tx: u32, ty: u32) {
  for (var i = 0u; i < TM; i++) {
    let m = m0 + ty + i * WG_M;
    if (m < p.m) {
      for (var j = 0u; j < TN; j++) {
        let n = n0 + tx + j * WG_N;
        if (n < p.n) {
          var v = (*acc)[i][j] + bias_at(n);
          if (ACCUMULATE) {
            v += y[m * p.n + n];
          }
          y[m * p.n + n] = v;
        }
      }
    }
  }
}

@compute @workgroup_size(WG_N, WG_M)
fn vec4_k(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  var acc: array<vec4<f32>, MAX_TM>;
  for (var k0 = 0u; k0 < p.k; k0 += BK) {
    load_vec4(m0, n0, k0, lid);
    workgroupBarrier();
    multiply(&acc, l.x, l.y);
    workgroupBarrier();
  }
  store(&acc, m0, n0, l.x, l.y);
}

@compute @workgroup_size(WG_N, WG_M)
fn scalar_k(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  var acc: array<vec4<f32>, MAX_TM>;
  for (var k0 = 0u; k0 < p.k; k0 += BK) {
    load_scalar(m0, n0, k0, lid);
    workgroupBarrier();
    multiply(&acc, l.x, l.y);
    workgroupBarrier();
  }
  store(&acc, m0, n0, l.x, l.y);
}
