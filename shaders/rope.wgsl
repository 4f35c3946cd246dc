// Rotary position embedding, HF rotate-half convention: for i < head_dim/2, (x_i, x_{i+half})
// rotates by angle pos * inv_freq[i].
//
//   main:    in place on x [T, heads, head_dim].
//   rope_kv: from one fused q/k/v product qkv [T, (heads + 2 kv_heads) * head_dim] (q, then k,
//            then v per token): rotated q to x [T, heads, head_dim], rotated k and plain v into
//            the paged KV cache [blocks, block_size, kv_heads, head_dim] at slots[t] (block *
//            block_size + offset; 0xFFFFFFFF is padding, skipped). The cache holds f32 bits, or
//            with KV_F16 f16 pairs packed in u32 (pack2x16float: core WGSL, no shader-f16).

struct Params {
  tokens: u32,
  heads: u32,
  head_dim: u32,
  kv_heads: u32, // rope_kv only (main's callers leave it 0)
}

override KV_F16: bool = false;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read> positions: array<u32>;
@group(0) @binding(3) var<storage, read> inv_freq: array<f32>;
@group(0) @binding(4) var<storage, read> qkv: array<f32>;
@group(0) @binding(5) var<storage, read> slots: array<u32>;
@group(0) @binding(6) var<storage, read_write> k_cache: array<u32>;
@group(0) @binding(7) var<storage, read_write> v_cache: array<u32>;

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

// Element e (< head_dim) of the rotated head whose row starts at qkv[base], at position pos.
fn rotated(base: u32, e: u32, pos: f32) -> f32 {
  let half = p.head_dim / 2u;
  let i = e % half;
  let sc = sincos(pos * inv_freq[i]);
  let x1 = qkv[base + i];
  let x2 = qkv[base + i + half];
  return select(x2 * sc.y + x1 * sc.x, x1 * sc.y - x2 * sc.x, e < half);
}

// One thread per element pair (2m, 2m+1) of a token's qkv row (head_dim is even), so that an
// f16 cache word is written by exactly one thread.
@compute @workgroup_size(256)
fn rope_kv(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let row_pairs = (p.heads + 2u * p.kv_heads) * p.head_dim / 2u;
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.tokens * row_pairs) {
    return;
  }
  let t = i / row_pairs;
  let c = (i % row_pairs) * 2u; // column in the qkv row
  let q_cols = p.heads * p.head_dim;
  let kv_cols = p.kv_heads * p.head_dim;
  let row = t * (q_cols + 2u * kv_cols);
  let pos = f32(positions[t]);
  if (c < q_cols) {
    let base = row + c - c % p.head_dim;
    let e = c % p.head_dim;
    x[t * q_cols + c] = rotated(base, e, pos);
    x[t * q_cols + c + 1u] = rotated(base, e + 1u, pos);
    return;
  }
  let slot = slots[t];
  if (slot == 0xffffffffu) {
    return;
  }
  var pair: vec2<f32>;
  var kc = c - q_cols; // column within k (or v)
  let is_k = kc < kv_cols;
  if (is_k) {
    let base = row + c - kc % p.head_dim;
    let e = kc % p.head_dim;
    pair = vec2<f32>(rotated(base, e, pos), rotated(base, e + 1u, pos));
  } else {
    kc -= kv_cols;
    pair = vec2<f32>(qkv[row + c], qkv[row + c + 1u]);
  }
  let dst = slot * kv_cols + kc;
  if (KV_F16) {
    let w = pack2x16float(pair);
    if (is_k) {
      k_cache[dst / 2u] = w;
    } else {
      v_cache[dst / 2u] = w;
    }
  } else {
    let w = bitcast<vec2<u32>>(pair);
    if (is_k) {
      k_cache[dst] = w.x;
      k_cache[dst + 1u] = w.y;
    } else {
      v_cache[dst] = w.x;
      v_cache[dst + 1u] = w.y;
    }
  }
}
