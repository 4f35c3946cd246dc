// Elementwise kernels: the gated activation (SwiGLU or GeGLU, override ACT of lib/gate_act)
// over the product of stacked [gate; up] weights, for the prefill path (decode fuses it into the
// products; the residual add is in the products' epilogues); and an in-place scale or soft-cap
// (embeddings times a constant, final logits capped).
//! import lib/gate_act

struct Params {
  count: u32,
  width: u32, // gated_halves: columns of out (a has twice as many)
  mode: u32, // scale_in_place: 0 scale, 1 soft-cap
  value: f32, // scale_in_place: the factor, or the cap
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return gid.x + gid.y * nwg.x * 256u;
}

// out[r, i] = act(a[r, i]) * a[r, width + i]: the gated activation over the product of stacked
// [gate; up] weights.
@compute @workgroup_size(256)
fn gated_halves(@builtin(global_invocation_id) gid: vec3<u32>,
                 @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = index(gid, nwg);
  if (i >= p.count) {
    return;
  }
  let r = i / p.width;
  let c = i % p.width;
  let g = a[r * 2u * p.width + c];
  out[i] = gate_act(g) * a[r * 2u * p.width + p.width + c];
}

// out[i] *= value (mode 0), or out[i] = value · tanh(out[i] / value) (mode 1, a soft-cap), in
// place. tanh(x) = 1 - 2 / (e^2x + 1), |x| clamped where tanh is ±1 in f32.
@compute @workgroup_size(256)
fn scale_in_place(@builtin(global_invocation_id) gid: vec3<u32>,
                  @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = index(gid, nwg);
  if (i >= p.count) {
    return;
  }
  if (p.mode == 0u) {
    out[i] *= p.value;
    return;
  }
  let x = clamp(out[i] / p.value, -15.0, 15.0);
  out[i] = p.value * (1.0 - 2.0 / (exp(2.0 * x) + 1.0));
}
