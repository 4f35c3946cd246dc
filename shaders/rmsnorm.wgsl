// RMSNorm: y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w. One workgroup per row,
// a workgroup tree reduction (no subgroups needed).

//! import lib/float_elems
const WG: u32 = 256u;

struct Params {
  rows: u32,
  dim: u32,
  eps: f32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

var<workgroup> partial: array<f32, WG>;

fn weight(i: u32) -> f32 {
  return float_elem(w[float_word(i)], i);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) {
    return;
  }
  let base = row * p.dim;
  var sum = 0.0;
  for (var i = lid; i < p.dim; i += WG) {
    let v = x[base + i];
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
  let scale = inverseSqrt(partial[0] / f32(p.dim) + p.eps);
  for (var i = lid; i < p.dim; i += WG) {
    y[base + i] = x[base + i] * scale * weight(i);
  }
}
