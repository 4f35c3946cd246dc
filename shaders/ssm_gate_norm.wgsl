// Mamba2's output step after the selective scan: the D skip, the SiLU gate and the grouped
// RMSNorm (llama.cpp's build_mamba2_layer after ggml_ssm_scan). Per token t, channel c < inner
// (inner = heads * head_dim, head of c = c / head_dim, group of c = c / group_width):
//   v[t, c]   = (y[t, c] + x[t, c] * d[c / head_dim]) * silu(z[t, c])   silu(s) = s / (1 + e^-s)
//   out[t, c] = w[c] * v[t, c] / sqrt(mean over c's group of v[t, .]^2 + eps)
// One workgroup per (token, group): each thread computes v for channels lid, lid + WG, ..., stores
// it in `out` and sums its squares in f32; a tree over workgroup memory adds the partial sums,
// then each thread scales the channels it stored. y, x and z are read at t * stride + offset + c
// (slices of wider rows); out is dense [tokens, inner].

const WG: u32 = 64u;

struct Params {
  tokens: u32,
  groups: u32,
  head_dim: u32,
  group_width: u32,
  inner: u32,
  eps: f32,
  _pad0: u32,
  _pad1: u32,
  y_stride: u32,
  y_off: u32,
  x_stride: u32,
  x_off: u32,
  z_stride: u32,
  z_off: u32,
  _pad2: u32,
  _pad3: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> z: array<f32>;
@group(0) @binding(4) var<storage, read> d: array<f32>;
@group(0) @binding(5) var<storage, read> w: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;

var<workgroup> partial: array<f32, WG>;

// The gated value v[t, c] before the norm.
fn gated(t: u32, c: u32) -> f32 {
  let s = z[t * p.z_stride + p.z_off + c];
  let skip = y[t * p.y_stride + p.y_off + c] + x[t * p.x_stride + p.x_off + c] * d[c / p.head_dim];
  return skip * (s / (1.0 + exp(-s)));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let item = wid.x + wid.y * nwg.x;
  // Uniform across the workgroup, so the barriers below stay in uniform control flow.
  if (item >= p.tokens * p.groups) {
    return;
  }
  let t = item / p.groups;
  let first = (item % p.groups) * p.group_width;
  let row = t * p.inner + first;
  var sum = 0.0;
  for (var i = lid; i < p.group_width; i += WG) {
    let v = gated(t, first + i);
    out[row + i] = v;
    sum += v * v;
  }
  partial[lid] = sum;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      partial[lid] += partial[lid + s];
    }
    workgroupBarrier();
  }
  let scale = inverseSqrt(partial[0] / f32(p.group_width) + p.eps);
  // Each thread rescales only the channels it stored itself.
  for (var i = lid; i < p.group_width; i += WG) {
    out[row + i] = out[row + i] * scale * w[first + i];
  }
}
