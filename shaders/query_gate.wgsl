// Gated attention (Qwen3.5's full-attention layers): the query projection gives per token and
// per head the head's query (head_dim values) then its gate (head_dim values).
//
// split:        rows [q0 g0 q1 g1 … (2Q) | k (KV) | v (KV)] → qkv rows [q (Q) | k | v] and gate
//               rows [g (Q)], Q = heads·head_dim, KV = kv_heads·head_dim. One thread per input
//               element (each lands in exactly one output); words are copied as u32, so the copy
//               is bit-exact (no flush of subnormals, NaN payloads kept).
// sigmoid_gate: attn[i] *= sigmoid(gate[i]) in place over `count` elements (dense rows of Q).

struct Params {
  count: u32, // threads: input elements (split) or gated elements (sigmoid_gate)
  in_width: u32, // split: 2Q + 2KV, an input row
  q_width: u32, // split: Q
  head_dim: u32, // split: head_dim
  out_width: u32, // split: Q + 2KV, a qkv row
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;

@group(0) @binding(1) var<storage, read> split_in: array<u32>;
@group(0) @binding(2) var<storage, read_write> split_qkv: array<u32>;
@group(0) @binding(3) var<storage, read_write> split_gate: array<u32>;

@group(0) @binding(4) var<storage, read_write> gated_attn: array<f32>;
@group(0) @binding(5) var<storage, read> gated_gate: array<f32>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return gid.x + gid.y * nwg.x * 256u;
}

@compute @workgroup_size(256)
fn split(@builtin(global_invocation_id) gid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = index(gid, nwg);
  if (i >= p.count) {
    return;
  }
  let t = i / p.in_width;
  let c = i % p.in_width;
  let word = split_in[i];
  if (c >= 2u * p.q_width) {
    // k and v keep their order, moved down by the Q gate values taken out.
    split_qkv[t * p.out_width + c - p.q_width] = word;
    return;
  }
  let h = c / (2u * p.head_dim);
  let j = c % (2u * p.head_dim);
  if (j < p.head_dim) {
    split_qkv[t * p.out_width + h * p.head_dim + j] = word;
  } else {
    split_gate[t * p.q_width + h * p.head_dim + j - p.head_dim] = word;
  }
}

// sigmoid(g) = 1 / (1 + e^-g): e^-g overflows to +inf for g < -88.7, giving 0, the limit.
@compute @workgroup_size(256)
fn sigmoid_gate(@builtin(global_invocation_id) gid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = index(gid, nwg);
  if (i >= p.count) {
    return;
  }
  gated_attn[i] = gated_attn[i] * (1.0 / (1.0 + exp(-gated_gate[i])));
}
