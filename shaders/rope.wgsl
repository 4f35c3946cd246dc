// Rotary position embedding, HF rotate-half convention, in place on q [T, heads, head_dim]:
// for i < head_dim/2, (x_i, x_{i+half}) rotates by angle pos * inv_freq[i].

const TWO_PI: f32 = 6.283185307179586;

struct Params {
  tokens: u32,
  heads: u32,
  head_dim: u32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read> positions: array<u32>;
@group(0) @binding(3) var<storage, read> inv_freq: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let half = p.head_dim / 2u;
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.tokens * p.heads * half) {
    return;
  }
  let j = i % half;
  let th = i / half; // token * heads + head
  let t = th / p.heads;
  let base = th * p.head_dim;
  // WGSL bounds sin/cos error only on [-pi, pi]: reduce the angle first.
  let raw = f32(positions[t]) * inv_freq[j];
  let angle = raw - TWO_PI * floor(raw / TWO_PI + 0.5);
  let c = cos(angle);
  let s = sin(angle);
  let x1 = x[base + j];
  let x2 = x[base + j + half];
  x[base + j] = x1 * c - x2 * s;
  x[base + j + half] = x2 * c + x1 * s;
}
