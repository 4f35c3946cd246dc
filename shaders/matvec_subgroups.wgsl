// Matrix-vector products for decode on devices with `subgroups`: y[m, n] = sum_k x[m, k] W[n, k]
// (+ b[n]) for up to 8 activation rows, the same contract and weight layout as `matvec.wgsl`
// (needs K a multiple of 8 for 16-bit weights, 4 for F32). Each subgroup owns whole output
// rows: its lanes split K with 16-byte weight loads, four in flight per lane, and reduce with
// `subgroupAdd`. No workgroup memory and no barrier, which matters where barriers are costly
// (CPU implementations such as SwiftShader run every invocation of a workgroup up to each one).
// Subgroups are taken as consecutive runs of `local_invocation_index`, as WebGPU
// implementations lay them out for one-dimensional workgroups; the reference tests check it.

enable subgroups;
// Loop bounds below depend on the subgroup index, not on the workgroup: every lane of one
// subgroup takes the same path, which is all `subgroupAdd` needs.
diagnostic(off, subgroup_uniformity);

override WEIGHT_DTYPE: u32 = 1u; // 0 f32, 1 f16, 2 bf16
override HAS_BIAS: bool = false;
// Activation rows per workgroup z-slice (1..8), fixed per pipeline.
override ROWS: u32 = 1u;
// Invocations per workgroup, and output rows per workgroup (the host picks WG / the smallest
// subgroup size); a subgroup takes several rows when there are fewer subgroups than rows.
override WG: u32 = 128u;
override RPW: u32 = 8u;

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

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg: u32) {
  let subgroups = max(WG / sg, 1u);
  let first = (wid.x + wid.y * nwg.x) * RPW;
  let m0 = wid.z * ROWS;
  let per_vec = select(8u, 4u, WEIGHT_DTYPE == 0u);
  let vecs = p.k / per_vec;
  for (var i = lid / sg; i < RPW; i += subgroups) {
    let n = first + i;
    if (n >= p.n) {
      break;
    }
    let base = n * vecs;
    var acc: array<f32, MAX_M>;
    for (var j = lane; j < vecs; j += UNROLL * sg) {
      var wv: array<vec4<u32>, UNROLL>;
      for (var u = 0u; u < UNROLL; u++) {
        let ju = j + u * sg;
        if (ju < vecs) {
          wv[u] = w[base + ju];
        }
      }
      for (var u = 0u; u < UNROLL; u++) {
        let ju = j + u * sg;
        if (ju < vecs) {
          for (var r = 0u; r < ROWS; r++) {
            if (m0 + r < p.m) {
              acc[r] += partial(wv[u], m0 + r, ju);
            }
          }
        }
      }
    }
    for (var r = 0u; r < ROWS; r++) {
      let total = subgroupAdd(acc[r]);
      if (lane == 0u && m0 + r < p.m) {
        y[(m0 + r) * p.n + n] = total + bias_at(n);
      }
    }
  }
}
