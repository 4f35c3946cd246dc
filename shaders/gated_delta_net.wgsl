// The gated delta rule (Qwen3.5's linear attention), recurrent form, prefill and decode alike.
//
// Per value head h the state is a matrix S [S_k rows, S_v columns]; value head h reads key and
// query head kh = h % H_k ("tiled", llama.cpp's GGUF order) or h / (H_v / H_k) ("grouped", the
// Hugging Face order), as `p.group` says (0: tiled, else H_v / H_k). Per token, in this order:
//   S = exp(g) · S                       (g: the log decay of (token, h))
//   d = beta · (v - Sᵀ k)                (beta already sigmoid'ed)
//   S = S + k ⊗ d
//   o = (Sᵀ q) / sqrt(S_k)               (q and k already L2-normalised)
// Column j of S only ever needs column j and v[j], so one invocation owns one column: it holds
// the column in private memory (up to 128 floats, 32 vec4) and walks its run's tokens in order.
//
// State layout: state[((slot · H_v + h) · S_v + j) · S_k + i] = S[i][j] (a column contiguous;
// with S_k = S_v this is ggml's layout). A run is a maximal span of tokens with one slot and
// consecutive positions; it starts from the slot's state, or from zeros when its first position
// is 0 (the slot's old contents ignored), and leaves its final state in the slot. Each slot is
// one run per step. A slot >= p.slots is skipped (its outputs left as they were).
//
// One dispatch covers the tokens [seg_begin, seg_end): a run cut by seg_begin goes on from the
// state the previous dispatch left in its slot. The wrapper sizes segments so that one thread's
// loops stay under lavapipe's 65535 iterations in all.

struct Params {
  tokens: u32,
  seg_begin: u32,
  seg_end: u32,
  hk: u32,
  hv: u32,
  sk: u32,
  sv: u32,
  group: u32,
  q_stride: u32,
  q_off: u32,
  k_stride: u32,
  k_off: u32,
  v_stride: u32,
  v_off: u32,
  g_stride: u32,
  g_off: u32,
  b_stride: u32,
  b_off: u32,
  o_stride: u32,
  o_off: u32,
  slots: u32,
  scale: f32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q_in: array<f32>;
@group(0) @binding(2) var<storage, read> k_in: array<f32>;
@group(0) @binding(3) var<storage, read> v_in: array<f32>;
@group(0) @binding(4) var<storage, read> g_in: array<f32>;
@group(0) @binding(5) var<storage, read> beta_in: array<f32>;
@group(0) @binding(6) var<storage, read_write> state: array<f32>;
@group(0) @binding(7) var<storage, read> positions: array<u32>;
@group(0) @binding(8) var<storage, read> state_slots: array<u32>;
@group(0) @binding(9) var<storage, read_write> out: array<f32>;

// Whether token t (> seg_begin) continues the run of token t - 1.
fn continues(t: u32) -> bool {
  return state_slots[t] == state_slots[t - 1u] && positions[t] == positions[t - 1u] + 1u;
}

fn k_at(base: u32, i: u32) -> f32 {
  if (i < p.sk) {
    return k_in[base + i];
  }
  return 0.0;
}

fn q_at(base: u32, i: u32) -> f32 {
  if (i < p.sk) {
    return q_in[base + i];
  }
  return 0.0;
}

// Elements 4c..4c+3 of a key or query row (zeros past S_k), unrolled: no loop to count.
fn k4(base: u32, c: u32) -> vec4<f32> {
  let i = 4u * c;
  return vec4<f32>(k_at(base, i), k_at(base, i + 1u), k_at(base, i + 2u), k_at(base, i + 3u));
}

fn q4(base: u32, c: u32) -> vec4<f32> {
  let i = 4u * c;
  return vec4<f32>(q_at(base, i), q_at(base, i + 1u), q_at(base, i + 2u), q_at(base, i + 3u));
}

fn state_at(base: u32, i: u32) -> f32 {
  if (i < p.sk) {
    return state[base + i];
  }
  return 0.0;
}

fn store_at(base: u32, i: u32, x: f32) {
  if (i < p.sk) {
    state[base + i] = x;
  }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let id = (wid.y * nwg.x + wid.x) * 64u + lid;
  let j = id % p.sv;
  let h = (id / p.sv) % p.hv;
  let t0 = p.seg_begin + id / (p.sv * p.hv);
  if (t0 >= p.seg_end) {
    return;
  }
  if (t0 > p.seg_begin && continues(t0)) {
    return;
  }
  let slot = state_slots[t0];
  if (slot >= p.slots) {
    return;
  }
  let kh = select(h % p.hk, h / max(p.group, 1u), p.group != 0u);
  let s4 = (p.sk + 3u) / 4u;
  let base = ((slot * p.hv + h) * p.sv + j) * p.sk;
  let fresh = positions[t0] == 0u;
  var s: array<vec4<f32>, 32>;
  for (var c = 0u; c < s4; c++) {
    let i = 4u * c;
    let old = vec4<f32>(state_at(base, i), state_at(base, i + 1u), state_at(base, i + 2u),
                        state_at(base, i + 3u));
    s[c] = select(old, vec4<f32>(0.0), fresh);
  }
  var t = t0;
  loop {
    let decay = exp(g_in[t * p.g_stride + p.g_off + h]);
    let beta = beta_in[t * p.b_stride + p.b_off + h];
    let kb = t * p.k_stride + p.k_off + kh * p.sk;
    let qb = t * p.q_stride + p.q_off + kh * p.sk;
    var kv = 0.0;
    for (var c = 0u; c < s4; c++) {
      s[c] = s[c] * decay;
      kv += dot(s[c], k4(kb, c));
    }
    let d = (v_in[t * p.v_stride + p.v_off + h * p.sv + j] - kv) * beta;
    var o = 0.0;
    for (var c = 0u; c < s4; c++) {
      s[c] = s[c] + k4(kb, c) * d;
      o += dot(s[c], q4(qb, c));
    }
    out[t * p.o_stride + p.o_off + h * p.sv + j] = o * p.scale;
    t += 1u;
    if (t >= p.seg_end || !continues(t)) {
      break;
    }
  }
  for (var c = 0u; c < s4; c++) {
    let i = 4u * c;
    store_at(base, i, s[c].x);
    store_at(base, i + 1u, s[c].y);
    store_at(base, i + 2u, s[c].z);
    store_at(base, i + 3u, s[c].w);
  }
}
