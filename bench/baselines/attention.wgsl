// Baseline for bench/attention.ts: the attention kernel as it was before the GQA-aware rewrite
// (shaders/attention.wgsl at 62c4480), kept only to time old against new in one run.
// Causal attention over the paged KV cache, for prefill chunks and decode alike.
// One workgroup per (query token, query head); query t at position pos[t] attends to keys
// 0..=pos[t] of its sequence, found through its block table (offset table_off[t]). Keys are
// processed in tiles of WG with an online softmax (running max and sum, rescaled per tile).
// GQA/MQA: query head h reads kv head h / (heads / kv_heads).
//
//   single: the whole key range in one workgroup, output normalised.
//   split:  the key range cut into `splits` parts along the key axis (workgroup_id.z); each part
//           writes (max, sum, unnormalised acc) partials, and `merge` combines them. Long
//           decode contexts use it so that many workgroups share one sequence's keys.

const WG: u32 = 64u;
const MAX_DIM_PER_THREAD: u32 = 4u; // head_dim <= 256

struct Params {
  tokens: u32,
  heads: u32,
  kv_heads: u32,
  head_dim: u32,
  block_size: u32,
  splits: u32,
  scale: f32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k_cache: array<f32>;
@group(0) @binding(3) var<storage, read> v_cache: array<f32>;
@group(0) @binding(4) var<storage, read> positions: array<u32>;
@group(0) @binding(5) var<storage, read> table_off: array<u32>;
@group(0) @binding(6) var<storage, read> block_table: array<u32>;
@group(0) @binding(7) var<storage, read_write> out: array<f32>;
// split only: per (token, head, split) max and sum, and acc [.., head_dim].
@group(0) @binding(8) var<storage, read_write> part_ml: array<vec2<f32>>;
@group(0) @binding(9) var<storage, read_write> part_acc: array<f32>;

var<workgroup> q_sh: array<f32, 256>;
var<workgroup> s_sh: array<f32, WG>;

fn key_base(t: u32, j: u32, kvh: u32) -> u32 {
  let block = block_table[table_off[t] + j / p.block_size];
  let slot = block * p.block_size + j % p.block_size;
  return (slot * p.kv_heads + kvh) * p.head_dim;
}

struct Partial {
  m: f32,
  l: f32,
  acc: array<f32, MAX_DIM_PER_THREAD>,
}

// Online softmax over keys [k_begin, k_end) for (t, h); each thread owns dims lid + WG*i.
fn attend(t: u32, h: u32, k_begin: u32, k_end: u32, lid: u32) -> Partial {
  let kvh = h / (p.heads / p.kv_heads);
  let qbase = (t * p.heads + h) * p.head_dim;
  for (var d = lid; d < p.head_dim; d += WG) {
    q_sh[d] = q[qbase + d];
  }
  workgroupBarrier();
  var r: Partial;
  r.m = -3.0e38;
  r.l = 0.0;
  for (var c = k_begin; c < k_end; c += WG) {
    let j = c + lid;
    var s = -3.0e38;
    if (j < k_end) {
      let kb = key_base(t, j, kvh);
      var dot = 0.0;
      for (var d = 0u; d < p.head_dim; d++) {
        dot += q_sh[d] * k_cache[kb + d];
      }
      s = dot * p.scale;
    }
    s_sh[lid] = s;
    workgroupBarrier();
    let n = min(WG, k_end - c);
    var tile_max = -3.0e38;
    for (var i = 0u; i < n; i++) {
      tile_max = max(tile_max, s_sh[i]);
    }
    let m_new = max(r.m, tile_max);
    let rescale = exp(r.m - m_new);
    workgroupBarrier();
    s_sh[lid] = select(0.0, exp(s - m_new), lid < n);
    workgroupBarrier();
    var tile_sum = 0.0;
    for (var i = 0u; i < n; i++) {
      tile_sum += s_sh[i];
    }
    r.l = r.l * rescale + tile_sum;
    for (var di = 0u; di < MAX_DIM_PER_THREAD; di++) {
      let d = lid + di * WG;
      if (d < p.head_dim) {
        var a = r.acc[di] * rescale;
        for (var i = 0u; i < n; i++) {
          a += s_sh[i] * v_cache[key_base(t, c + i, kvh) + d];
        }
        r.acc[di] = a;
      }
    }
    r.m = m_new;
    workgroupBarrier();
  }
  return r;
}

@compute @workgroup_size(WG)
fn single(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let t = wid.x;
  let h = wid.y;
  let r = attend(t, h, 0u, positions[t] + 1u, lid);
  let obase = (t * p.heads + h) * p.head_dim;
  for (var di = 0u; di < MAX_DIM_PER_THREAD; di++) {
    let d = lid + di * WG;
    if (d < p.head_dim) {
      out[obase + d] = r.acc[di] / r.l;
    }
  }
}

@compute @workgroup_size(WG)
fn split(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let t = wid.x;
  let h = wid.y;
  let part = wid.z;
  let keys = positions[t] + 1u;
  let per = (keys + p.splits - 1u) / p.splits;
  let k_begin = min(keys, part * per);
  let k_end = min(keys, k_begin + per);
  let r = attend(t, h, k_begin, k_end, lid);
  let pi = (t * p.heads + h) * p.splits + part;
  if (lid == 0u) {
    part_ml[pi] = vec2<f32>(r.m, r.l);
  }
  for (var di = 0u; di < MAX_DIM_PER_THREAD; di++) {
    let d = lid + di * WG;
    if (d < p.head_dim) {
      part_acc[pi * p.head_dim + d] = r.acc[di];
    }
  }
}

@compute @workgroup_size(WG)
fn merge(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let t = wid.x;
  let h = wid.y;
  let p0 = (t * p.heads + h) * p.splits;
  var m = -3.0e38;
  for (var s = 0u; s < p.splits; s++) {
    if (part_ml[p0 + s].y > 0.0) {
      m = max(m, part_ml[p0 + s].x);
    }
  }
  var l = 0.0;
  for (var s = 0u; s < p.splits; s++) {
    let ml = part_ml[p0 + s];
    if (ml.y > 0.0) {
      l += ml.y * exp(ml.x - m);
    }
  }
  let obase = (t * p.heads + h) * p.head_dim;
  for (var d = lid; d < p.head_dim; d += WG) {
    var a = 0.0;
    for (var s = 0u; s < p.splits; s++) {
      let ml = part_ml[p0 + s];
      if (ml.y > 0.0) {
        a += part_acc[(p0 + s) * p.head_dim + d] * exp(ml.x - m);
      }
    }
    out[obase + d] = a / l;
  }
}
