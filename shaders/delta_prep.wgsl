// Qwen3.5's gated delta net layer, the steps around the delta rule (llama.cpp's
// build_layer_attn_linear), two entry points:
//
// `prep`, before the rule, per token t over the conv output row [q (H_k·d_k) | k (H_k·d_k) | v]
// and the row [b (H_v) | alpha (H_v)]:
//   q and k heads, in place:  x = x / sqrt(sum of x² over the head + eps)
//     (build_gdn_l2_norm: an RMSNorm with eps / d_k, scaled by 1 / sqrt(d_k); not ggml_l2_norm's
//     x / max(|x|, eps))
//   beta[t, h] = sigmoid(b[t, h]) = 1 / (1 + e^-b)
//   g[t, h]    = softplus(alpha[t, h] + dt_bias[h]) · decay[h]   (decay = -exp(A_log))
//     softplus(s) = s when s > 20, else log(1 + e^s) (ggml's threshold)
// Workgroups [0, norm_items) norm one (token, head) each, q heads then k heads of a token
// (item = t·2·H_k + head); the rest compute beta and g, one thread per (token, value head).
//
// `norm_gate`, after the rule, per token t, value head h, channel j < d_v:
//   out[t, h·d_v + j] = (o[t, h, j] / sqrt(mean over j of o[t, h, ·]² + eps)) · w[j] · silu(z)
//   silu(s) = s / (1 + e^-s); the norm first, then the gate (build_norm_gated)
// One workgroup per (token, head); out is dense [tokens, H_v·d_v].
//
// Both norms: each of WG threads sums the squares of elements lid, lid + WG, ... in f32, a tree
// over workgroup memory adds the partial sums, and each thread rescales the elements it read, so
// the q and k norms can write over their input. Strided rows are read at t·stride + offset + e.

const WG: u32 = 64u;

// Shared by both entry points: `prep` reads conv rows as a and [b | alpha] rows as b;
// `norm_gate` reads o as a and z as b.
struct Params {
  tokens: u32,
  heads: u32, // prep: H_k; norm_gate: H_v
  dim: u32, // prep: d_k; norm_gate: d_v
  v_heads: u32, // prep: H_v
  a_stride: u32,
  a_off: u32,
  b_stride: u32,
  b_off: u32,
  norm_items: u32, // prep: tokens·2·H_k
  eps: f32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// prep
@group(0) @binding(1) var<storage, read_write> conv: array<f32>;
@group(0) @binding(2) var<storage, read> ab: array<f32>;
@group(0) @binding(3) var<storage, read> dt_bias: array<f32>;
@group(0) @binding(4) var<storage, read> decay: array<f32>;
@group(0) @binding(5) var<storage, read_write> beta_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> g_out: array<f32>;
// norm_gate
@group(0) @binding(7) var<storage, read> o_in: array<f32>;
@group(0) @binding(8) var<storage, read> z_in: array<f32>;
@group(0) @binding(9) var<storage, read> w: array<f32>;
@group(0) @binding(10) var<storage, read_write> out: array<f32>;

var<workgroup> partial: array<f32, WG>;

// The sum of every thread's `sum`, in every thread. Call in uniform control flow.
fn workgroup_sum(lid: u32, sum: f32) -> f32 {
  partial[lid] = sum;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      partial[lid] += partial[lid + s];
    }
    workgroupBarrier();
  }
  return partial[0];
}

fn softplus(s: f32) -> f32 {
  if (s > 20.0) {
    return s;
  }
  return log(1.0 + exp(s));
}

// beta and g of item i = t·H_v + h.
fn gates(i: u32) {
  let t = i / p.v_heads;
  let h = i % p.v_heads;
  let row = t * p.b_stride + p.b_off;
  beta_out[i] = 1.0 / (1.0 + exp(-ab[row + h]));
  g_out[i] = softplus(ab[row + p.v_heads + h] + dt_bias[h]) * decay[h];
}

@compute @workgroup_size(WG)
fn prep(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let item = wid.x + wid.y * nwg.x;
  // Uniform across the workgroup, so the barriers below stay in uniform control flow.
  if (item >= p.norm_items) {
    let i = (item - p.norm_items) * WG + lid;
    if (i < p.tokens * p.v_heads) {
      gates(i);
    }
    return;
  }
  let t = item / (2u * p.heads);
  let first = t * p.a_stride + p.a_off + (item % (2u * p.heads)) * p.dim;
  var sum = 0.0;
  for (var e = lid; e < p.dim; e += WG) {
    let x = conv[first + e];
    sum += x * x;
  }
  let scale = inverseSqrt(workgroup_sum(lid, sum) + p.eps);
  // Each thread rescales only the elements it read itself.
  for (var e = lid; e < p.dim; e += WG) {
    conv[first + e] = conv[first + e] * scale;
  }
}

@compute @workgroup_size(WG)
fn norm_gate(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  let item = wid.x + wid.y * nwg.x;
  if (item >= p.tokens * p.heads) {
    return;
  }
  let t = item / p.heads;
  let col = (item % p.heads) * p.dim;
  let o_row = t * p.a_stride + p.a_off + col;
  var sum = 0.0;
  for (var j = lid; j < p.dim; j += WG) {
    let x = o_in[o_row + j];
    sum += x * x;
  }
  let scale = inverseSqrt(workgroup_sum(lid, sum) / f32(p.dim) + p.eps);
  let z_row = t * p.b_stride + p.b_off + col;
  let out_row = t * p.heads * p.dim + col;
  for (var j = lid; j < p.dim; j += WG) {
    let s = z_in[z_row + j];
    out[out_row + j] = o_in[o_row + j] * scale * w[j] * (s / (1.0 + exp(-s)));
  }
}
