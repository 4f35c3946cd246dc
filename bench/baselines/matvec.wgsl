// Bandwidth-bound matrix-vector products for decode, with the work around them fused in:
//
//   y[m, n] = s[m] * sum_k x[m, k] * g[k] * W[n, k] (+ b[y0 + n])
//
// for up to 8 activation rows per workgroup z-slice, W read as vec4<u32> (eight F16/BF16 or four
// F32 weights per 16-byte load, UNROLL loads in flight per thread). Needs K a multiple of 8
// (16-bit weights) or 4 (F32); other shapes use `matmul.wgsl`.
//
// - NORM: RMSNorm of x folded in. g is the norm weight (f32) and s[m] = 1/sqrt(mean(x[m]^2) +
//   eps). The threads that share an output row read all of x[m] between them, so the sum of
//   squares comes out of the same loop and the same reduction as the product: no extra pass.
// - MODE 0: y = result. MODE 1: y += result (the residual add). MODE 2: SwiGLU over two weight
//   rows, y[m, n] = silu(r(n)) * r(n + N) with W = [gate; up] stacked ([2N, K]).
//
// TPR threads share an output row (a power of two; 1 means no reduction at all, which suits CPU
// adapters where a workgroup barrier costs a switch through every invocation), and each thread
// works on RPT output rows at once, so that every load of x serves RPT weight loads (on a CPU
// adapter the loads of x, the same for every thread, cost as much as the weights'). A workgroup
// of WG threads computes WG / TPR * RPT output rows.

override WEIGHT_DTYPE: u32 = 1u; // 0 f32, 1 f16, 2 bf16
override HAS_BIAS: bool = false;
override NORM: bool = false;
override MODE: u32 = 0u;
// Activation rows per workgroup z-slice (1..8), fixed per pipeline so that every loop over rows
// has constant bounds and the accumulators stay in registers.
override ROWS: u32 = 1u;
override TPR: u32 = 64u;
override WG: u32 = 256u;
override RPT: u32 = 1u; // 1, 2, 4 or 8

const MAX_M: u32 = 8u;
const MAX_RPT: u32 = 8u;
// 16-byte weight loads in flight per thread: UNROLL / RPT positions along K, for RPT rows each.
const UNROLL: u32 = 8u;

struct Params {
  m: u32,
  n: u32,
  k: u32,
  eps: f32,
  // Output row stride and column offset: y[m, n] lands at y[m * ldy + y0 + n] (a product over
  // one part of a weight split by rows writes its columns of the whole output).
  ldy: u32,
  y0: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> bias: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> gamma: array<vec4<f32>>;

var<workgroup> red: array<f32, WG * MAX_M>;

fn half_pair(word: u32) -> vec2<f32> {
  if (WEIGHT_DTYPE == 1u) {
    return unpack2x16float(word);
  }
  return vec2<f32>(bitcast<f32>(word << 16u), bitcast<f32>(word & 0xffff0000u));
}

// The first four weights of a 16-byte load (all of them for F32)...
fn lo(wv: vec4<u32>) -> vec4<f32> {
  if (WEIGHT_DTYPE == 0u) {
    return bitcast<vec4<f32>>(wv);
  }
  return vec4<f32>(half_pair(wv.x), half_pair(wv.y));
}

// ...and the last four (16-bit weights only).
fn hi(wv: vec4<u32>) -> vec4<f32> {
  return vec4<f32>(half_pair(wv.z), half_pair(wv.w));
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

// Sum `v` over the TPR threads of each output row; every thread of the row gets the sums.
fn row_sum(v: array<f32, MAX_M>, lid: u32, t: u32) -> array<f32, MAX_M> {
  var out = v;
  if (TPR > 1u) {
    for (var r = 0u; r < ROWS; r++) {
      red[lid * MAX_M + r] = v[r];
    }
    workgroupBarrier();
    for (var s = TPR / 2u; s > 0u; s >>= 1u) {
      if (t < s) {
        for (var r = 0u; r < ROWS; r++) {
          red[lid * MAX_M + r] += red[(lid + s) * MAX_M + r];
        }
      }
      workgroupBarrier();
    }
    for (var r = 0u; r < ROWS; r++) {
      out[r] = red[(lid - t) * MAX_M + r];
    }
    workgroupBarrier(); // `red` is reused by the next sum
  }
  return out;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = lid % TPR;
  let n0 = ((wid.x + wid.y * nwg.x) * (WG / TPR) + lid / TPR) * RPT;
  let m0 = wid.z * ROWS;
  // Weights per 16-byte load, and x vectors per load.
  let per_vec = select(8u, 4u, WEIGHT_DTYPE == 0u);
  let xv = per_vec / 4u;
  let vecs = p.k / per_vec;
  let x_row = p.k / 4u;
  let positions = UNROLL / RPT;
  var acc: array<array<f32, MAX_M>, MAX_RPT>;
  var acc2: array<array<f32, MAX_M>, MAX_RPT>; // MODE 2: the up rows
  var ss: array<f32, MAX_M>; // NORM: sums of squares of x
  if (n0 < p.n) {
    // Rows past N (the last workgroup) read row N-1; their results are never stored.
    var base: array<u32, MAX_RPT>;
    var base2: array<u32, MAX_RPT>;
    for (var i = 0u; i < RPT; i++) {
      base[i] = min(n0 + i, p.n - 1u) * vecs;
      base2[i] = base[i] + p.n * vecs;
    }
    var j = t;
    loop {
      if (j >= vecs) {
        break;
      }
      // Issue every load of this round before using any of them.
      var wv: array<vec4<u32>, UNROLL>;
      var wu: array<vec4<u32>, UNROLL>;
      for (var u = 0u; u < positions; u++) {
        let ju = j + u * TPR;
        if (ju < vecs) {
          for (var i = 0u; i < RPT; i++) {
            wv[u * RPT + i] = w[base[i] + ju];
            if (MODE == 2u) {
              wu[u * RPT + i] = w[base2[i] + ju];
            }
          }
        }
      }
      for (var u = 0u; u < positions; u++) {
        let ju = j + u * TPR;
        if (ju < vecs) {
          var ga = vec4<f32>(1.0);
          var gb = vec4<f32>(1.0);
          if (NORM) {
            ga = gamma[ju * xv];
            if (xv == 2u) {
              gb = gamma[ju * xv + 1u];
            }
          }
          for (var r = 0u; r < ROWS; r++) {
            // Rows past M (the last z-slice) read row M-1; their results are never stored.
            let xi = min(m0 + r, p.m - 1u) * x_row + ju * xv;
            let xa = x[xi];
            var xb = vec4<f32>(0.0);
            if (xv == 2u) {
              xb = x[xi + 1u];
            }
            if (NORM) {
              ss[r] += dot(xa, xa) + dot(xb, xb);
            }
            let na = xa * ga;
            let nb = xb * gb;
            for (var i = 0u; i < RPT; i++) {
              let wi = wv[u * RPT + i];
              var d = dot(lo(wi), na);
              if (xv == 2u) {
                d += dot(hi(wi), nb);
              }
              acc[i][r] += d;
              if (MODE == 2u) {
                let ui = wu[u * RPT + i];
                var e = dot(lo(ui), na);
                if (xv == 2u) {
                  e += dot(hi(ui), nb);
                }
                acc2[i][r] += e;
              }
            }
          }
        }
      }
      j += positions * TPR;
    }
  }
  for (var i = 0u; i < RPT; i++) {
    acc[i] = row_sum(acc[i], lid, t);
    if (MODE == 2u) {
      acc2[i] = row_sum(acc2[i], lid, t);
    }
  }
  if (NORM) {
    ss = row_sum(ss, lid, t);
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
        if (NORM) {
          scale = inverseSqrt(ss[r] / f32(p.k) + p.eps);
        }
        let o = m * p.ldy + p.y0 + n;
        let v = acc[i][r] * scale + bias_at(p.y0 + n);
        if (MODE == 0u) {
          y[o] = v;
        } else if (MODE == 1u) {
          y[o] += v;
        } else {
          y[o] = v / (1.0 + exp(-v)) * (acc2[i][r] * scale);
        }
      }
    }
  }
}
