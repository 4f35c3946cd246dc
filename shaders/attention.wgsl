// Causal attention over the paged KV cache, for prefill chunks and decode alike. Query t at
// position pos[t] attends to keys 0..=pos[t] of its sequence, found through its block table
// (offset table_off[t]); with a sliding window w > 0, to keys pos[t] - w + 1..=pos[t] only (the
// loops start there: blocks wholly before the window are never read). Scores are q·k · scale,
// soft-capped as cap · tanh(s / cap) when softcap > 0. With SINKS, each query head h has a learned
// logit sinks[h] that joins the softmax as one more column with no value: it only enlarges the
// denominator (`normaliser`, applied where the output is normalised: `single` and `merge`).
//
// GQA-aware: one workgroup per (query token, kv head, head chunk) serves the GROUP query heads
// of that chunk (all heads/kv_heads heads that share the kv head, unless that is more than
// MAX_GROUP or q would not fit in workgroup memory; then the wrapper cuts them into `chunks`).
// Each K and V row is read once per workgroup, for all its query heads. Keys go in tiles of WG:
//
//   1. thread i scores key c+i against every query head of the group (scores stay in
//      registers) and folds them into a per-head tile maximum with a workgroup atomicMax on
//      order-preserving bits;
//   2. barrier; thread i turns its scores into exp(s - m_new) in p_sh and its key's cache
//      offset into kb_sh; every thread rescales its running sums by exp(m_old - m_new);
//   3. barrier; thread (key lane kl, dim lane dl) accumulates p * V over keys i = kl (mod
//      key_lanes) of the tile for its dim pairs. The softmax denominator l is kept per key owner
//      (step 2) and summed once at the end.
// Two barriers per tile; the tile maxima are double-buffered by tile parity so the next tile
// can start before every thread has finished step 3. Key lanes are summed once at the end.
//
// The cache holds f32 bits, or with KV_F16 f16 pairs packed in u32 (unpack2x16float: core
// WGSL). head_dim is even, at most 256, and GROUP * head_dim <= 1024.
//
//   single: the whole key range in one workgroup, output normalised.
//   split:  the key range cut into `splits` parts along the key axis (workgroup_id.z); each part
//           writes (max, sum, unnormalised acc) partials per query head, and `merge` combines
//           them. Long decode contexts use it so that many workgroups share one sequence's keys.

//! import lib/attention_knobs

const WG: u32 = 64u;
const MAX_GROUP: u32 = 8u;
const MAX_PPT: u32 = 2u; // dim pairs per thread: head_dim <= 2 * 2 * WG
const NEG: f32 = -3.0e38;

override KV_F16: bool = false;
override GROUP: u32 = 1u; // query heads per workgroup, <= MAX_GROUP
override PPT: u32 = 1u; // dim pairs per thread, <= MAX_PPT

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k_cache: array<u32>;
@group(0) @binding(3) var<storage, read> v_cache: array<u32>;
@group(0) @binding(4) var<storage, read> positions: array<u32>;
@group(0) @binding(5) var<storage, read> table_off: array<u32>;
@group(0) @binding(6) var<storage, read> block_table: array<u32>;
@group(0) @binding(7) var<storage, read_write> out: array<f32>;
// split only: per (token, head, split) max and sum, and acc [.., head_dim].
@group(0) @binding(8) var<storage, read_write> part_ml: array<vec2<f32>>;
@group(0) @binding(9) var<storage, read_write> part_acc: array<f32>;
// single and merge: f32 [heads], read with SINKS only.
@group(0) @binding(10) var<storage, read> sinks: array<f32>;

var<workgroup> q_sh: array<vec2<f32>, 512>; // [GROUP][head_dim / 2]
// Probabilities of the tile's keys, four heads to a vec4: [GROUP / 4][WG]; at the end, the
// key owners' running sums l [WG][GROUP] (as floats of the first 128 vec4s).
var<workgroup> p_sh: array<vec4<f32>, 2 * WG>;
var<workgroup> kb_sh: array<u32, WG>; // cache offset of each key of the tile
var<workgroup> tile_max: array<atomic<u32>, 16>; // [parity][MAX_GROUP], order-preserving bits
var<workgroup> red: array<vec2<f32>, 512>; // [WG][GROUP] acc of each key lane, at the end

fn load_k(e: u32) -> vec2<f32> {
  if (KV_F16) {
    return unpack2x16float(k_cache[e >> 1u]);
  }
  return bitcast<vec2<f32>>(vec2<u32>(k_cache[e], k_cache[e + 1u]));
}

fn load_v(e: u32) -> vec2<f32> {
  if (KV_F16) {
    return unpack2x16float(v_cache[e >> 1u]);
  }
  return bitcast<vec2<f32>>(vec2<u32>(v_cache[e], v_cache[e + 1u]));
}

// f32 to u32 bits whose unsigned order is the float order (so atomicMax finds the max).
fn ordered(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn unordered(u: u32) -> f32 {
  return bitcast<f32>(select(~u, u & 0x7fffffffu, (u & 0x80000000u) != 0u));
}

struct Partial {
  m: array<f32, MAX_GROUP>,
  l: array<f32, MAX_GROUP>,
  acc: array<vec2<f32>, 16>, // [GROUP][MAX_PPT]: dim pairs lid % lanes + s * lanes
}

// Online softmax over keys [k_begin, k_end) for query heads h0..h0+GROUP of token t, which share
// kv head kvh. The result (l and acc summed over key lanes) is valid in threads lid < lanes.
fn attend(t: u32, kvh: u32, h0: u32, k_begin: u32, k_end: u32, lid: u32) -> Partial {
  let pairs = p.head_dim / 2u;
  let qbase = (t * p.heads + h0) * p.head_dim;
  for (var i = lid; i < GROUP * pairs; i += WG) {
    q_sh[i] = vec2<f32>(q[qbase + 2u * i], q[qbase + 2u * i + 1u]);
  }
  if (lid < 2u * MAX_GROUP) {
    atomicStore(&tile_max[lid], 0u);
  }
  workgroupBarrier();
  let kl = lid / p.lanes;
  let dl = lid % p.lanes;
  var r: Partial;
  for (var g = 0u; g < GROUP; g++) {
    r.m[g] = NEG;
  }
  var own_l: array<f32, MAX_GROUP>; // running sum of this thread's keys' probabilities
  var par = 0u;
  for (var c = k_begin; c < k_end; c += WG) {
    let n = min(WG, k_end - c);
    // 1. Scores of key c + lid.
    // Assigned, not only declared: naga hoists loop locals and would not zero them per tile.
    var s: array<f32, MAX_GROUP>;
    s = array<f32, MAX_GROUP>();
    var kb = 0u;
    if (lid < n) {
      let j = c + lid;
      let block = block_table[table_off[t] + j / p.block_size];
      kb = ((block * p.block_size + j % p.block_size) * p.kv_heads + kvh) * p.head_dim;
      for (var d = 0u; d < pairs; d++) {
        let kv = load_k(kb + 2u * d);
        for (var g = 0u; g < GROUP; g++) {
          s[g] += dot(q_sh[g * pairs + d], kv);
        }
      }
      for (var g = 0u; g < GROUP; g++) {
        s[g] = capped(s[g] * p.scale);
        atomicMax(&tile_max[par * MAX_GROUP + g], ordered(s[g]));
      }
    }
    workgroupBarrier();
    // 2. Probabilities against the new running max.
    var rescale: array<f32, MAX_GROUP>;
    var pv: array<vec4<f32>, 2>;
    pv = array<vec4<f32>, 2>();
    for (var g = 0u; g < GROUP; g++) {
      let m_new = max(r.m[g], unordered(atomicLoad(&tile_max[par * MAX_GROUP + g])));
      rescale[g] = exp(r.m[g] - m_new);
      r.m[g] = m_new;
      let pg = select(0.0, exp(s[g] - m_new), lid < n);
      pv[g / 4u][g % 4u] = pg;
      own_l[g] = own_l[g] * rescale[g] + pg;
    }
    for (var b = 0u; b * 4u < GROUP; b++) {
      p_sh[b * WG + lid] = pv[b];
    }
    kb_sh[lid] = kb;
    if (lid < MAX_GROUP) {
      atomicStore(&tile_max[(1u - par) * MAX_GROUP + lid], 0u);
    }
    workgroupBarrier();
    // 3. acc = acc * rescale + sum_i p_i V_i over this key lane's keys.
    for (var g = 0u; g < GROUP; g++) {
      for (var u = 0u; u < PPT; u++) {
        r.acc[g * MAX_PPT + u] *= rescale[g];
      }
    }
    if (kl < p.key_lanes) {
      for (var i = kl; i < n; i += p.key_lanes) {
        let vb = kb_sh[i];
        var pk: array<vec4<f32>, 2>;
        for (var b = 0u; b * 4u < GROUP; b++) {
          pk[b] = p_sh[b * WG + i];
        }
        for (var u = 0u; u < PPT; u++) {
          let dp = dl + u * p.lanes;
          if (dp < pairs) {
            let v = load_v(vb + 2u * dp);
            for (var g = 0u; g < GROUP; g++) {
              r.acc[g * MAX_PPT + u] += pk[g / 4u][g % 4u] * v;
            }
          }
        }
      }
    }
    par = 1u - par;
  }
  // l: the sum of the key owners' running sums. acc: with one dim pair per thread (lanes < WG),
  // the sum over key lanes.
  workgroupBarrier();
  for (var g = 0u; g < GROUP; g++) {
    p_sh[(lid * GROUP + g) / 4u][(lid * GROUP + g) % 4u] = own_l[g];
  }
  if (p.key_lanes > 1u && kl < p.key_lanes) {
    for (var g = 0u; g < GROUP; g++) {
      red[lid * GROUP + g] = r.acc[g * MAX_PPT];
    }
  }
  workgroupBarrier();
  if (lid < p.lanes) {
    for (var g = 0u; g < GROUP; g++) {
      var l = 0.0;
      for (var i = 0u; i < WG; i++) {
        l += p_sh[(i * GROUP + g) / 4u][(i * GROUP + g) % 4u];
      }
      r.l[g] = l;
      for (var k = 1u; k < p.key_lanes; k++) {
        r.acc[g * MAX_PPT] += red[(k * p.lanes + dl) * GROUP + g];
      }
    }
  }
  return r;
}

// (token, first query head, kv head) of this workgroup.
fn heads_of(wid: vec3<u32>) -> vec3<u32> {
  let kvh = wid.y / p.chunks;
  let h0 = kvh * (p.heads / p.kv_heads) + (wid.y % p.chunks) * GROUP;
  return vec3<u32>(wid.x, h0, kvh);
}

@compute @workgroup_size(WG)
fn single(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let th = heads_of(wid);
  let pos = positions[th.x];
  let r = attend(th.x, th.z, th.y, first_key(pos), pos + 1u, lid);
  if (lid >= p.lanes) {
    return;
  }
  for (var g = 0u; g < GROUP; g++) {
    let obase = (th.x * p.heads + th.y + g) * p.head_dim;
    let norm = normaliser(th.y + g, r.m[g], r.l[g]);
    for (var u = 0u; u < PPT; u++) {
      let dp = lid + u * p.lanes;
      if (dp < p.head_dim / 2u) {
        let o = r.acc[g * MAX_PPT + u] * norm;
        out[obase + 2u * dp] = o.x;
        out[obase + 2u * dp + 1u] = o.y;
      }
    }
  }
}

@compute @workgroup_size(WG)
fn split(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let th = heads_of(wid);
  let part = wid.z;
  let keys = positions[th.x] + 1u;
  let first = first_key(positions[th.x]);
  let per = (keys - first + p.splits - 1u) / p.splits;
  let k_begin = min(keys, first + part * per);
  let k_end = min(keys, k_begin + per);
  let r = attend(th.x, th.z, th.y, k_begin, k_end, lid);
  if (lid >= p.lanes) {
    return;
  }
  for (var g = 0u; g < GROUP; g++) {
    let pi = (th.x * p.heads + th.y + g) * p.splits + part;
    if (lid == 0u) {
      part_ml[pi] = vec2<f32>(r.m[g], r.l[g]);
    }
    for (var u = 0u; u < PPT; u++) {
      let dp = lid + u * p.lanes;
      if (dp < p.head_dim / 2u) {
        let a = r.acc[g * MAX_PPT + u];
        part_acc[pi * p.head_dim + 2u * dp] = a.x;
        part_acc[pi * p.head_dim + 2u * dp + 1u] = a.y;
      }
    }
  }
}

// One workgroup per (token, query head): combine the splits' partials.
@compute @workgroup_size(WG)
fn merge(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let t = wid.x;
  let h = wid.y;
  let p0 = (t * p.heads + h) * p.splits;
  var m = NEG;
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
  let norm = normaliser(h, m, l);
  for (var d = lid; d < p.head_dim; d += WG) {
    var a = 0.0;
    for (var s = 0u; s < p.splits; s++) {
      let ml = part_ml[p0 + s];
      if (ml.y > 0.0) {
        a += part_acc[(p0 + s) * p.head_dim + d] * exp(ml.x - m);
      }
    }
    out[obase + d] = a * norm;
  }
}
