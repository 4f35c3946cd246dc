// Elementwise kernels for the prefill path (decode fuses them into the products): SwiGLU over
// the product of stacked [gate; up] weights. The residual add is in the products' epilogues.

struct Params {
  count: u32,
  width: u32, // swiglu_halves: columns of out (a has twice as many)
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return gid.x + gid.y * nwg.x * 256u;
}

// out[r, i] = silu(a[r, i]) * a[r, width + i]: SwiGLU over the product of stacked [gate; up]
// weights.
@compute @workgroup_size(256)
fn swiglu_halves(@builtin(global_invocation_id) gid: vec3<u32>,
                 @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = index(gid, nwg);
  if (i >= p.count) {
    return;
  }
  let r = i / p.width;
  let c = i % p.width;
  let g = a[r * 2u * p.width + c];
  out[i] = g / (1.0 + exp(-g)) * a[r * 2u * p.width + p.width + c];
}
