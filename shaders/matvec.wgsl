// Bandwidth-bound matrix-vector products for decode: y[m, n] = sum_k x[m, k] W[n, k] (+ b[n])
// for up to 8 activation rows, reading the weights as vec4<u32> (eight F16/BF16 or four F32
// weights per 16-byte load) with four loads in flight per thread. Needs K a multiple of 8
// (16-bit weights) or 4 (F32); other shapes use `matmul.wgsl`.
// A workgroup of 256 threads computes 4 output rows, 64 threads per row.

override WEIGHT_DTYPE: u32 = 1u; // 0 f32, 1 f16, 2 bf16
override HAS_BIAS: bool = false;
// Activation rows per workgroup row-slice (1..8), fixed per pipeline so that every loop over
// rows has constant bounds and the accumulators stay in registers.
override ROWS: u32 = 1u;

const TPR: u32 = 64u;
const RPW: u32 = 4u;
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
@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> bias: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

var<workgroup> red: array<array<f32, MAX_M>, 256>;

fn half_pair(word: u32) -> vec2<f32> {
  if (WEIGHT_DTYPE == 1u) {
    return unpack2x16float(word);
  }
  return vec2<f32>(bitcast<f32>(word << 16u), bitcast<f32>(word & 0xffff0000u));
}

fn bias_at(n: u32) -> f32 {
  if (!HAS_BIAS) {
    return 0.0;
  }
  if (WEIGHT_DTYPE == 0u) {
    return bitcast<f32>(bias[n]);
  }
  return half_pair(bias[n >> 1u])[n & 1u];
}

// The contribution of one 16-byte weight load at vector index j of the row, for row m of x.
fn partial(wv: vec4<u32>, m: u32, j: u32) -> f32 {
  if (WEIGHT_DTYPE == 0u) {
    return dot(bitcast<vec4<f32>>(wv), x[m * (p.k / 4u) + j]);
  }
  let xa = x[m * (p.k / 4u) + 2u * j];
  let xb = x[m * (p.k / 4u) + 2u * j + 1u];
  let a = half_pair(wv.x);
  let b = half_pair(wv.y);
  let c = half_pair(wv.z);
  let d = half_pair(wv.w);
  return dot(vec4<f32>(a, b), xa) + dot(vec4<f32>(c, d), xb);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = lid % TPR;
  let n = (wid.x + wid.y * nwg.x) * RPW + lid / TPR;
  let m0 = wid.z * ROWS;
  let per_vec = select(8u, 4u, WEIGHT_DTYPE == 0u);
  let vecs = p.k / per_vec;
  var acc: array<f32, MAX_M>;
  if (n < p.n) {
    let base = n * vecs;
    var j = t;
    loop {
      if (j >= vecs) {
        break;
      }
      // Issue up to UNROLL independent loads before using them.
      var wv: array<vec4<u32>, UNROLL>;
      for (var u = 0u; u < UNROLL; u++) {
        let ju = j + u * TPR;
        if (ju < vecs) {
          wv[u] = w[base + ju];
        }
      }
      for (var u = 0u; u < UNROLL; u++) {
        let ju = j + u * TPR;
        if (ju < vecs) {
          for (var r = 0u; r < MAX_M; r++) {
            if (r < ROWS && m0 + r < p.m) {
              acc[r] += partial(wv[u], m0 + r, ju);
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
    y[(m0 + t) * p.n + n] = red[lid - t][t] + bias_at(n);
  }
}
