// Causal short convolution over a step of several sequences (LFM2's gated conv, Mamba2's and
// Qwen3.5's conv before SiLU), with a per-sequence rolling state.
//
// The tokens of one sequence lie together in the step with consecutive positions (a "run"),
// all naming the sequence's state slot. The conv input u of token t is
//   gated: B ⊙ x  (B and x from the token's input row)      silu: x
// and y = Σ_j w[c][j] · u(p - (W-1) + j), tap W-1 on the current token. u at an earlier position
// comes from this step when that token is in the run, else from the slot's state (W-1 rows: u at
// the W-1 positions before the run's first token), and is 0 below position 0, so a run starting
// at position 0 never reads its slot's old rows.
//   gated: out = C ⊙ y              silu: out = silu(y + bias)
//
// conv:  one thread per (token, channel) writes out.
// state: the thread of each run's last token and a channel writes the slot's new rows (u at the
//        run's last W-1 positions), having read the old rows it still needs first. Each thread
//        reads and writes only its own slot's column, so no other thread races it.

struct Params {
  tokens: u32,
  channels: u32,
  width: u32,
  slots: u32,
  row_stride: u32,
  x_offset: u32,
  b_offset: u32,
  c_offset: u32,
  out_stride: u32,
  gated: u32,
  has_bias: u32,
  _pad0: u32,
}

const MAX_WIDTH: u32 = 8u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> input: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read> state_in: array<f32>;
@group(0) @binding(5) var<storage, read> positions: array<u32>;
@group(0) @binding(6) var<storage, read> state_slots: array<u32>;
@group(0) @binding(7) var<storage, read_write> out: array<f32>;
@group(0) @binding(8) var<storage, read_write> state_rw: array<f32>;

/** The conv input u of token t, channel c. */
fn conv_input(t: u32, c: u32) -> f32 {
  let row = t * p.row_stride;
  let x = input[row + p.x_offset + c];
  if (p.gated != 0u) {
    return input[row + p.b_offset + c] * x;
  }
  return x;
}

/** How many tokens right before t belong to its run (same slot, positions one less each), up to
 * `cap`. */
fn run_before(t: u32, cap: u32) -> u32 {
  let slot = state_slots[t];
  let pos = positions[t];
  var k = 0u;
  loop {
    if (k >= cap || k >= t) {
      break;
    }
    let prev = t - k - 1u;
    if (state_slots[prev] != slot || positions[prev] + k + 1u != pos) {
      break;
    }
    k += 1u;
  }
  return k;
}

/** Thread index in a 2-D grid of 256-thread workgroups. */
fn thread_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return gid.x + gid.y * nwg.x * 256u;
}

const FROM_STEP: u32 = 0xffffffffu;
const ZERO: u32 = 0xfffffffeu;

/**
 * Where u at the position d tokens back from token t comes from (pos its position, k the run's
 * tokens before t): FROM_STEP (token t - d) when d <= k; ZERO below position 0 or for a slot out
 * of range; else the index in the state of the old row for that position (the run starts at
 * pos - k, and the slot's rows are the W-1 positions right before it).
 */
fn source(c: u32, pos: u32, slot: u32, k: u32, d: u32) -> u32 {
  if (d <= k) {
    return FROM_STEP;
  }
  if (d > pos || slot >= p.slots) {
    return ZERO;
  }
  let row = p.width - 1u - (d - k);
  return (slot * (p.width - 1u) + row) * p.channels + c;
}

@compute @workgroup_size(256)
fn conv(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = thread_index(gid, nwg);
  if (i >= p.tokens * p.channels) {
    return;
  }
  let t = i / p.channels;
  let c = i % p.channels;
  let pos = positions[t];
  let slot = state_slots[t];
  let k = run_before(t, p.width - 1u);
  var y = 0.0;
  for (var j = 0u; j < p.width; j++) {
    let d = p.width - 1u - j;
    let at = source(c, pos, slot, k, d);
    var u = 0.0;
    if (at == FROM_STEP) {
      u = conv_input(t - d, c);
    } else if (at != ZERO) {
      u = state_in[at];
    }
    y += weight[c * p.width + j] * u;
  }
  let row = t * p.row_stride;
  if (p.gated != 0u) {
    out[t * p.out_stride + c] = input[row + p.c_offset + c] * y;
  } else {
    if (p.has_bias != 0u) {
      y += bias[c];
    }
    out[t * p.out_stride + c] = y / (1.0 + exp(-y));
  }
}

@compute @workgroup_size(256)
fn state(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = thread_index(gid, nwg);
  if (i >= p.tokens * p.channels) {
    return;
  }
  let t = i / p.channels;
  let c = i % p.channels;
  let slot = state_slots[t];
  if (slot >= p.slots) {
    return;
  }
  // Only a run's last token: the next token (if any) belongs to another run.
  if (t + 1u < p.tokens && state_slots[t + 1u] == slot && positions[t + 1u] == positions[t] + 1u) {
    return;
  }
  let pos = positions[t];
  let rows = p.width - 1u;
  let k = run_before(t, rows);
  // New row r holds u at pos + 1 - rows + r, that is d = rows - 1 - r tokens back from t.
  var vals: array<f32, MAX_WIDTH>;
  for (var r = 0u; r < rows; r++) {
    let d = rows - 1u - r;
    let at = source(c, pos, slot, k, d);
    var u = 0.0;
    if (at == FROM_STEP) {
      u = conv_input(t - d, c);
    } else if (at != ZERO) {
      u = state_rw[at];
    }
    vals[r] = u;
  }
  for (var r = 0u; r < rows; r++) {
    state_rw[(slot * rows + r) * p.channels + c] = vals[r];
  }
}
