// Causal attention over the paged KV cache for CPU implementations of WebGPU (lavapipe,
// llvmpipe, SwiftShader; the `cpu` kernel paths), with the masks, window, soft-cap, sinks and
// split layout of attention.wgsl (its `merge` combines this file's split partials).
//
// A CPU implementation runs a workgroup's invocations as the lanes of one core's SIMD unit and
// pays for every barrier and every workgroup-memory access, which the tiled kernel of
// attention.wgsl is built on. Here one invocation owns one (query token, kv head, head chunk,
// key split) and walks its keys alone: each K and V row is read once for the GROUP query heads
// that share it, q and the running sums stay in the invocation's own memory, and nothing is
// shared, so there is no barrier. Parallelism comes from tokens, kv heads and key splits
// (decode splits long contexts across invocations; `merge` joins them).
//
// Online softmax per query head: the running maximum only moves up, and the running sum and
// accumulator are rescaled only when it does (one exp per key and head otherwise).
//
// head_dim is a multiple of 4 and GROUP * head_dim <= 4 * MAX_QD4 (the wrapper chunks the heads).
// Each thread walks at most ROWS_KEYS keys (attention.ts): lavapipe ends an invocation's loops
// after 65535 iterations in all, which one thread over a long context would pass.

//! import lib/attention_knobs

const WG: u32 = 8u;
const MAX_GROUP: u32 = 8u;
const MAX_QD4: u32 = 64u; // GROUP * head_dim / 4 at most: q and acc of 256 floats each
const NEG: f32 = -3.0e38;

override KV_F16: bool = false;
override GROUP: u32 = 1u; // query heads per invocation, <= MAX_GROUP

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k_cache: array<u32>;
@group(0) @binding(3) var<storage, read> v_cache: array<u32>;
@group(0) @binding(4) var<storage, read> positions: array<u32>;
@group(0) @binding(5) var<storage, read> table_off: array<u32>;
@group(0) @binding(6) var<storage, read> block_table: array<u32>;
@group(0) @binding(7) var<storage, read_write> out: array<vec4<f32>>;
// rows_split only: per (token, head, split) max and sum, and acc [.., head_dim].
@group(0) @binding(8) var<storage, read_write> part_ml: array<vec2<f32>>;
@group(0) @binding(9) var<storage, read_write> part_acc: array<vec4<f32>>;
// rows only: f32 [heads], read with SINKS.
@group(0) @binding(10) var<storage, read> sinks: array<f32>;

var<private> q_reg: array<vec4<f32>, MAX_QD4>; // [GROUP][head_dim / 4]
var<private> acc: array<vec4<f32>, MAX_QD4>; // [GROUP][head_dim / 4]
var<private> m_run: array<f32, MAX_GROUP>;
var<private> l_run: array<f32, MAX_GROUP>;

// Four cached keys' (values') elements from element `e` (a multiple of 4).
fn load_k4(e: u32) -> vec4<f32> {
  if (KV_F16) {
    return vec4<f32>(unpack2x16float(k_cache[e >> 1u]), unpack2x16float(k_cache[(e >> 1u) + 1u]));
  }
  return bitcast<vec4<f32>>(vec4<u32>(k_cache[e], k_cache[e + 1u], k_cache[e + 2u], k_cache[e + 3u]));
}

fn load_v4(e: u32) -> vec4<f32> {
  if (KV_F16) {
    return vec4<f32>(unpack2x16float(v_cache[e >> 1u]), unpack2x16float(v_cache[(e >> 1u) + 1u]));
  }
  return bitcast<vec4<f32>>(vec4<u32>(v_cache[e], v_cache[e + 1u], v_cache[e + 2u], v_cache[e + 3u]));
}

// Online softmax over keys k_begin, k_begin + stride, ... below k_end for query heads
// h0..h0+GROUP of token t, which share kv head kvh; leaves m_run, l_run and acc (unnormalised).
fn attend(t: u32, kvh: u32, h0: u32, k_begin: u32, k_end: u32, stride: u32) {
  let d4 = p.head_dim / 4u;
  let qbase = (t * p.heads + h0) * d4;
  for (var i = 0u; i < GROUP * d4; i++) {
    q_reg[i] = q[qbase + i];
    acc[i] = vec4<f32>(0.0);
  }
  for (var g = 0u; g < GROUP; g++) {
    m_run[g] = NEG;
    l_run[g] = 0.0;
  }
  let table = table_off[t];
  for (var j = k_begin; j < k_end; j += stride) {
    let block = block_table[table + j / p.block_size];
    let kb = ((block * p.block_size + j % p.block_size) * p.kv_heads + kvh) * p.head_dim;
    var s: array<f32, MAX_GROUP>;
    s = array<f32, MAX_GROUP>();
    for (var d = 0u; d < d4; d++) {
      let k = load_k4(kb + 4u * d);
      for (var g = 0u; g < GROUP; g++) {
        s[g] += dot(q_reg[g * d4 + d], k);
      }
    }
    var w: array<f32, MAX_GROUP>;
    for (var g = 0u; g < GROUP; g++) {
      let sg = capped(s[g] * p.scale);
      if (sg > m_run[g]) {
        let r = exp(m_run[g] - sg);
        m_run[g] = sg;
        l_run[g] *= r;
        for (var d = 0u; d < d4; d++) {
          acc[g * d4 + d] *= r;
        }
      }
      w[g] = exp(sg - m_run[g]);
      l_run[g] += w[g];
    }
    for (var d = 0u; d < d4; d++) {
      let v = load_v4(kb + 4u * d);
      for (var g = 0u; g < GROUP; g++) {
        acc[g * d4 + d] += w[g] * v;
      }
    }
  }
}

// (token, kv head, first query head, split) of invocation `i`; token >= p.tokens past the end.
fn task(i: u32) -> vec4<u32> {
  let split = i % p.splits;
  let rest = i / p.splits;
  let y = rest % (p.kv_heads * p.chunks);
  let kvh = y / p.chunks;
  let h0 = kvh * (p.heads / p.kv_heads) + (y % p.chunks) * GROUP;
  return vec4<u32>(rest / (p.kv_heads * p.chunks), kvh, h0, split);
}

fn index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
  return (wid.x + wid.y * nwg.x) * WG + lid;
}

@compute @workgroup_size(WG)
fn rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let x = task(index(wid, nwg, lid));
  if (x.x >= p.tokens) {
    return;
  }
  let pos = positions[x.x];
  attend(x.x, x.y, x.z, first_key(pos), pos + 1u, 1u);
  let d4 = p.head_dim / 4u;
  for (var g = 0u; g < GROUP; g++) {
    let norm = normaliser(x.z + g, m_run[g], l_run[g]);
    let obase = (x.x * p.heads + x.z + g) * d4;
    for (var d = 0u; d < d4; d++) {
      out[obase + d] = acc[g * d4 + d] * norm;
    }
  }
}

@compute @workgroup_size(WG)
fn rows_split(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
  let x = task(index(wid, nwg, lid));
  if (x.x >= p.tokens) {
    return;
  }
  // Split s takes every splits-th key from first + s: the threads of a workgroup (consecutive
  // splits) read neighbouring keys together.
  let pos = positions[x.x];
  attend(x.x, x.y, x.z, first_key(pos) + x.w, pos + 1u, p.splits);
  let d4 = p.head_dim / 4u;
  for (var g = 0u; g < GROUP; g++) {
    let pi = (x.x * p.heads + x.z + g) * p.splits + x.w;
    part_ml[pi] = vec2<f32>(m_run[g], l_run[g]);
    for (var d = 0u; d < d4; d++) {
      part_acc[pi * d4 + d] = acc[g * d4 + d];
    }
  }
}
