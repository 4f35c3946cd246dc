// Rotary position embedding, HF rotate-half convention, in place on q [T, heads, head_dim]:
// for i < head_dim/2, (x_i, x_{i+half}) rotates by angle pos * inv_freq[i].

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

// sin and cos to about one ulp. WGSL's built-ins only promise 2^-11 absolute error on
// [-pi, pi] (SwiftShader is near that bound), too coarse for logits within 1e-3 of a float64
// reference. Cody-Waite reduction by pi/2 in two parts, then Taylor polynomials on [-pi/4, pi/4].
fn sincos(a: f32) -> vec2<f32> {
  let q = round(a * 0.6366197723675814);
  var r = a - q * 1.5707963705062866;
  r = r - q * -4.371139000186243e-8;
  let r2 = r * r;
  let s = r + r * r2 * (-0.16666666666666666 + r2 * (0.008333333333333333 + r2 * (-1.984126984126984e-4 + r2 * 2.755731922398589e-6)));
  let c = 1.0 + r2 * (-0.5 + r2 * (0.041666666666666664 + r2 * (-0.001388888888888889 + r2 * 2.48015873015873e-5)));
  let quadrant = i32(q) & 3;
  if (quadrant == 0) {
    return vec2<f32>(s, c);
  }
  if (quadrant == 1) {
    return vec2<f32>(c, -s);
  }
  if (quadrant == 2) {
    return vec2<f32>(-s, -c);
  }
  return vec2<f32>(-c, s);
}

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
  let sc = sincos(f32(positions[t]) * inv_freq[j]);
  let s = sc.x;
  let c = sc.y;
  let x1 = x[base + j];
  let x2 = x[base + j + half];
  x[base + j] = x1 * c - x2 * s;
  x[base + j + half] = x2 * c + x1 * s;
}
