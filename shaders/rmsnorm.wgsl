// RMSNorm: y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w. One workgroup per row,
// a workgroup tree reduction (no subgroups needed).
//
// Rows need not be contiguous: row r starts at element
//   offset + (r / group_rows) * group_stride + (r % group_rows) * dim,
// so rows come in groups (the heads of one token) whose starts are group_stride apart (one
// token's whole q/k/v row). A plain [rows, dim] matrix is group_rows = 1, group_stride = dim,
// offset = 0. `main` reads x and writes y at the same places (with ACCUMULATE, adds to them: a
// residual branch normed before its add); `in_place` normalizes y's rows where they are (a q/k
// norm inside the fused q/k/v product's output).

//! import lib/float_elems
const WG: u32 = 256u;
override ACCUMULATE: bool = false;

struct Params {
  rows: u32,
  dim: u32,
  eps: f32,
  group_rows: u32,
  group_stride: u32,
  offset: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

var<workgroup> partial: array<f32, WG>;

fn weight(i: u32) -> f32 {
  return float_elem(w[float_word(i)], i);
}

fn row_base(row: u32) -> u32 {
  return p.offset + (row / p.group_rows) * p.group_stride + (row % p.group_rows) * p.dim;
}

// 1 / sqrt(mean square + eps) of the row whose per-thread partial sums of squares are `sum`.
fn inverse_rms(lid: u32, sum: f32) -> f32 {
  partial[lid] = sum;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      partial[lid] += partial[lid + s];
    }
    workgroupBarrier();
  }
  return inverseSqrt(partial[0] / f32(p.dim) + p.eps);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) {
    return;
  }
  let base = row_base(row);
  var sum = 0.0;
  for (var i = lid; i < p.dim; i += WG) {
    let v = x[base + i];
    sum += v * v;
  }
  let scale = inverse_rms(lid, sum);
  for (var i = lid; i < p.dim; i += WG) {
    let v = x[base + i] * scale * weight(i);
    if (ACCUMULATE) {
      y[base + i] += v;
    } else {
      y[base + i] = v;
    }
  }
}

@compute @workgroup_size(WG)
fn in_place(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) {
    return;
  }
  let base = row_base(row);
  var sum = 0.0;
  for (var i = lid; i < p.dim; i += WG) {
    let v = y[base + i];
    sum += v * v;
  }
  // Every thread has read its elements (inverse_rms ends on a barrier) before any is written.
  let scale = inverse_rms(lid, sum);
  for (var i = lid; i < p.dim; i += WG) {
    y[base + i] = y[base + i] * scale * weight(i);
  }
}
