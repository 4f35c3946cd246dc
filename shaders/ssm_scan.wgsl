// Mamba2 selective scan, the recurrent form (the arithmetic of ggml's SSM_SCAN for a scalar A per
// head; the D skip, the gate and the grouped RMSNorm are later steps of the layer).
//
// Per token t, head h (B/C group g = h / (heads / groups)), channel p of head_dim, state n:
//   dt' = softplus(dt[t, h] + dt_bias[h])      softplus(v) = v above 20, else log(1 + exp(v))
//   dA  = exp(dt' * A[h])
//   s[h, p, n] = s[h, p, n] * dA + B[t, g, n] * (x[t, h, p] * dt')
//   y[t, h, p] = sum_n C[t, g, n] * s[h, p, n]
// dt_bias is added here (llama.cpp adds it in the layer before the op; the sum is the same).
//
// A step holds runs: a sequence's tokens, contiguous, with consecutive positions and one state
// slot. A token continues the run of the token before it when both have the same slot and its
// position is one more; otherwise it starts a run. One invocation per (run start, h, p) walks its
// run with the state row s[h, p, :] in private memory (vec4 lanes, d_state <= 128), then writes
// it back to the slot. A run starting at position 0 starts from zeros (the slot's old contents are
// never read); others start from the slot. A slot serves at most one run a step. Tokens whose
// slot is >= slot_count are padding: their y is left as it was. A dispatch walks tokens
// [begin, tokens): lavapipe ends an invocation's loops after 65535 iterations in all, so the
// wrapper cuts a step into dispatches of at most max_run tokens, and a run cut between two resumes
// from the state the first left in its slot.
//
// x, B and C are read from one buffer `xbc` (the conv output row [x | B | C]), each at its own
// offset and row stride in elements; dt from `dt` likewise. The state is f32
// [slot_count, heads, head_dim, d_state] (ggml's order); y is [tokens, heads, head_dim].

struct Params {
  tokens: u32,
  heads: u32,
  head_dim: u32,
  d_state: u32,
  groups: u32,
  slot_count: u32,
  max_run: u32,
  begin: u32, // this dispatch's first token (`tokens` is one past its last)
  x_off: u32,
  x_stride: u32,
  dt_off: u32,
  dt_stride: u32,
  b_off: u32,
  b_stride: u32,
  c_off: u32,
  c_stride: u32,
}

const MAX_LANES: u32 = 32u; // d_state <= 128, four per vec4

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xbc: array<f32>;
@group(0) @binding(2) var<storage, read> dt: array<f32>;
@group(0) @binding(3) var<storage, read> a_head: array<f32>;
@group(0) @binding(4) var<storage, read> dt_bias: array<f32>;
@group(0) @binding(5) var<storage, read> slots: array<u32>;
@group(0) @binding(6) var<storage, read> positions: array<u32>;
@group(0) @binding(7) var<storage, read_write> state: array<f32>;
@group(0) @binding(8) var<storage, read_write> y: array<f32>;

// Token t (> 0) continues the run of token t - 1.
fn continues(t: u32) -> bool {
  return slots[t] == slots[t - 1u] && positions[t] == positions[t - 1u] + 1u;
}

// Lanes 4k..4k+3 of the d_state values at xbc[base..], zero past d_state (no loop: lavapipe counts
// every loop iteration against its limit).
fn read4(base: u32, k: u32) -> vec4<f32> {
  let n = vec4<u32>(4u * k) + vec4<u32>(0u, 1u, 2u, 3u);
  let m = min(n, vec4<u32>(p.d_state - 1u));
  let v = vec4<f32>(xbc[base + m.x], xbc[base + m.y], xbc[base + m.z], xbc[base + m.w]);
  return select(vec4<f32>(0.0), v, n < vec4<u32>(p.d_state));
}

fn softplus(v: f32) -> f32 {
  return select(log(1.0 + exp(v)), v, v > 20.0);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  let row = p.heads * p.head_dim;
  if (i >= (p.tokens - p.begin) * row) {
    return;
  }
  let t0 = p.begin + i / row;
  let hp = i % row;
  let slot = slots[t0];
  // A run cut by the previous dispatch resumes here from the state it left in the slot.
  if (slot >= p.slot_count || (t0 > p.begin && continues(t0))) {
    return;
  }
  let h = hp / p.head_dim;
  let g = h / (p.heads / p.groups);
  let lanes = (p.d_state + 3u) / 4u;
  let base = (slot * row + hp) * p.d_state;
  var s: array<vec4<f32>, MAX_LANES>;
  if (positions[t0] != 0u) {
    for (var n = 0u; n < p.d_state; n++) {
      s[n / 4u][n % 4u] = state[base + n];
    }
  }
  let a = a_head[h];
  let bias = dt_bias[h];
  var t = t0;
  loop {
    let dts = softplus(dt[p.dt_off + t * p.dt_stride + h] + bias);
    let da = exp(dts * a);
    let xdt = xbc[p.x_off + t * p.x_stride + hp] * dts;
    let b0 = p.b_off + t * p.b_stride + g * p.d_state;
    let c0 = p.c_off + t * p.c_stride + g * p.d_state;
    var acc = vec4<f32>(0.0);
    for (var k = 0u; k < lanes; k++) {
      s[k] = s[k] * da + read4(b0, k) * xdt;
      acc += s[k] * read4(c0, k);
    }
    y[t * row + hp] = (acc.x + acc.y) + (acc.z + acc.w);
    t++;
    if (t >= p.tokens || t - t0 >= p.max_run || !continues(t)) {
      break;
    }
  }
  for (var n = 0u; n < p.d_state; n++) {
    state[base + n] = s[n / 4u][n % 4u];
  }
}
