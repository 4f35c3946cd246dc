// The GPU sampler: one workgroup per sequence over its logits row [V].
// Order (as HF's logits processors, then vLLM-style penalties before temperature):
//   banned / allowed masks → repetition penalty (tokens seen in prompt or output) →
//   frequency and presence penalties (output counts) → temperature → top-k → top-p → min-p →
//   draw (inverse CDF over token ids with a uniform u) or greedy argmax (temperature 0 / top_k 1).
// Logprobs are those of the raw distribution (log_softmax of the unprocessed logits).
// top-k and top-p thresholds are found by bisection over the order-preserving u32 keys of the
// f32 values, so ties are kept as HF keeps them and nothing needs sorting.

const WG: u32 = 256u;
const NEG_INF: f32 = -3.4028234e38;
const MAX_TOP: u32 = 20u;

const FLAG_GIVEN_U: u32 = 1u;
const FLAG_ALLOWED: u32 = 2u;
const FLAG_BANNED: u32 = 4u;

struct Globals {
  seqs: u32,
  vocab: u32,
  words: u32, // bitmap words per sequence: ceil(vocab / 32)
  write_probs: u32,
}

struct SeqParams {
  temperature: f32,
  top_k: u32, // 0: off
  top_p: f32,
  min_p: f32,
  repetition_penalty: f32,
  frequency_penalty: f32,
  presence_penalty: f32,
  seed_lo: u32,
  seed_hi: u32,
  step: u32,
  logprobs: u32, // top alternatives to report, <= 20
  flags: u32,
  u: f32, // the draw, when FLAG_GIVEN_U
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> g: Globals;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> params: array<SeqParams>;
// bit 31: the token appears in prompt or output; bits 0..30: times it appears in the output.
@group(0) @binding(3) var<storage, read> counts: array<u32>;
// per sequence: `words` words of the allowed bitmap, then `words` of the banned one.
@group(0) @binding(4) var<storage, read> masks: array<u32>;
// processed logits; with write_probs, the final distribution on exit.
@group(0) @binding(5) var<storage, read_write> work: array<f32>;
// per sequence: the chosen token, then the bits of its f32 logprob.
@group(0) @binding(6) var<storage, read_write> result: array<u32>;
// per sequence: MAX_TOP ids, then MAX_TOP logprob bits.
@group(0) @binding(7) var<storage, read_write> top: array<u32>;

var<workgroup> red_f: array<f32, WG>;
var<workgroup> red_u: array<u32, WG>;

fn pcg(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

// The counter-based draw for (seed, step): the same u for the same request and step, whatever
// else is in the batch. Mirrored bit for bit by `rngUniform` in TypeScript.
fn rng_uniform(seed_lo: u32, seed_hi: u32, step: u32) -> f32 {
  let h = pcg(seed_lo ^ pcg(seed_hi ^ pcg(step ^ 0x9e3779b9u)));
  return f32(h >> 8u) * (1.0 / 16777216.0);
}

fn key(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn sum_f(lid: u32, v: f32) -> f32 {
  red_f[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      red_f[lid] += red_f[lid + s];
    }
    workgroupBarrier();
  }
  let r = workgroupUniformLoad(&red_f[0]);
  workgroupBarrier();
  return r;
}

fn max_f(lid: u32, v: f32) -> f32 {
  red_f[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      red_f[lid] = max(red_f[lid], red_f[lid + s]);
    }
    workgroupBarrier();
  }
  let r = workgroupUniformLoad(&red_f[0]);
  workgroupBarrier();
  return r;
}

fn sum_u(lid: u32, v: u32) -> u32 {
  red_u[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      red_u[lid] += red_u[lid + s];
    }
    workgroupBarrier();
  }
  let r = workgroupUniformLoad(&red_u[0]);
  workgroupBarrier();
  return r;
}

// argmax of `vals` over the row (ties: lowest id); value in red_f[0], id in red_u[0].
fn argmax_row(lid: u32, base: u32, from_work: bool, skip_from: u32, skip_count: u32) -> vec2<u32> {
  var best = NEG_INF;
  var best_id = 0xffffffffu;
  for (var i = lid; i < g.vocab; i += WG) {
    var v = select(logits[base + i], work[base + i], from_work);
    for (var j = 0u; j < skip_count; j++) {
      if (top[skip_from + j] == i) {
        v = NEG_INF;
      }
    }
    if (best_id == 0xffffffffu || v > best) {
      best = v;
      best_id = i;
    }
  }
  red_f[lid] = best;
  red_u[lid] = best_id;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      let ov = red_f[lid + s];
      let oi = red_u[lid + s];
      if (oi != 0xffffffffu && (red_u[lid] == 0xffffffffu || ov > red_f[lid] || (ov == red_f[lid] && oi < red_u[lid]))) {
        red_f[lid] = ov;
        red_u[lid] = oi;
      }
    }
    workgroupBarrier();
  }
  let r = vec2<u32>(red_u[0], bitcast<u32>(red_f[0]));
  workgroupBarrier();
  return r;
}

fn bit(map_base: u32, i: u32, from_allowed: bool) -> bool {
  let w = masks[map_base + select(g.words, 0u, from_allowed) + i / 32u];
  return ((w >> (i % 32u)) & 1u) != 0u;
}

@compute @workgroup_size(WG)
fn sample(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let s = wid.x;
  if (s >= g.seqs) {
    return;
  }
  let p = params[s];
  let base = s * g.vocab;
  let map_base = s * 2u * g.words;
  let greedy = p.temperature == 0.0 || p.top_k == 1u;
  let inv_t = select(1.0 / p.temperature, 1.0, greedy);

  // 1. masks and penalties, then temperature, into work[].
  for (var i = lid; i < g.vocab; i += WG) {
    var l = logits[base + i];
    let c = counts[base + i];
    if ((c & 0x80000000u) != 0u && p.repetition_penalty != 1.0) {
      l = select(l * p.repetition_penalty, l / p.repetition_penalty, l > 0.0);
    }
    let n = f32(c & 0x7fffffffu);
    l -= p.frequency_penalty * n + select(0.0, p.presence_penalty, n > 0.0);
    l = select(l * inv_t, l, greedy);
    if (((p.flags & FLAG_ALLOWED) != 0u && !bit(map_base, i, true)) ||
        ((p.flags & FLAG_BANNED) != 0u && bit(map_base, i, false))) {
      l = NEG_INF;
    }
    work[base + i] = l;
  }
  workgroupBarrier();

  var chosen = 0u;
  if (greedy) {
    chosen = argmax_row(lid, base, true, 0u, 0u).x;
  } else {
    // 2. top-k: the largest key t with count(key >= t) >= k; keep key >= t (ties kept).
    if (p.top_k > 1u && p.top_k < g.vocab) {
      var lo = 0u;
      var hi = 0xffffffffu;
      while (lo < hi) {
        let mid = lo + ((hi - lo) >> 1u) + ((hi - lo) & 1u); // ceil, without overflow
        var c = 0u;
        for (var i = lid; i < g.vocab; i += WG) {
          c += select(0u, 1u, key(work[base + i]) >= mid);
        }
        if (sum_u(lid, c) >= p.top_k) {
          lo = mid;
        } else {
          hi = mid - 1u;
        }
      }
      for (var i = lid; i < g.vocab; i += WG) {
        if (key(work[base + i]) < lo) {
          work[base + i] = NEG_INF;
        }
      }
      workgroupBarrier();
    }
    // 3. top-p: keep a token when the mass strictly above it is below top_p; the kept set is
    //    {key >= t} for the smallest t with mass(key > t) < top_p.
    if (p.top_p < 1.0) {
      var m = NEG_INF;
      for (var i = lid; i < g.vocab; i += WG) {
        m = max(m, work[base + i]);
      }
      m = max_f(lid, m);
      var z = 0.0;
      for (var i = lid; i < g.vocab; i += WG) {
        z += exp(work[base + i] - m);
      }
      z = sum_f(lid, z);
      var lo = 0u;
      var hi = 0xffffffffu;
      while (lo < hi) {
        let mid = lo + (hi - lo) / 2u;
        var above = 0.0;
        for (var i = lid; i < g.vocab; i += WG) {
          let v = work[base + i];
          above += select(0.0, exp(v - m), key(v) > mid);
        }
        if (sum_f(lid, above) / z < p.top_p) {
          hi = mid;
        } else {
          lo = mid + 1u;
        }
      }
      for (var i = lid; i < g.vocab; i += WG) {
        if (key(work[base + i]) < lo) {
          work[base + i] = NEG_INF;
        }
      }
      workgroupBarrier();
    }
    // 4. min-p: drop p < min_p * p_max, i.e. l - l_max < ln(min_p).
    var m = NEG_INF;
    for (var i = lid; i < g.vocab; i += WG) {
      m = max(m, work[base + i]);
    }
    m = max_f(lid, m);
    if (p.min_p > 0.0) {
      let cut = log(p.min_p);
      for (var i = lid; i < g.vocab; i += WG) {
        if (work[base + i] - m < cut) {
          work[base + i] = NEG_INF;
        }
      }
      workgroupBarrier();
    }
    // 5. draw by inverse CDF in token-id order: each thread owns a contiguous chunk.
    let chunk = (g.vocab + WG - 1u) / WG;
    let begin = min(g.vocab, lid * chunk);
    let end = min(g.vocab, begin + chunk);
    var local = 0.0;
    var last_nonzero = 0xffffffffu;
    for (var i = begin; i < end; i++) {
      let e = select(0.0, exp(work[base + i] - m), work[base + i] > NEG_INF);
      local += e;
      if (e > 0.0) {
        last_nonzero = i;
      }
    }
    red_f[lid] = local;
    workgroupBarrier();
    // Inclusive scan of the chunk sums (Hillis-Steele).
    for (var off = 1u; off < WG; off <<= 1u) {
      let v = select(0.0, red_f[lid - off], lid >= off);
      workgroupBarrier();
      red_f[lid] += v;
      workgroupBarrier();
    }
    let total = red_f[WG - 1u];
    let before = select(0.0, red_f[lid - 1u], lid > 0u);
    var u = p.u;
    if ((p.flags & FLAG_GIVEN_U) == 0u) {
      u = rng_uniform(p.seed_lo, p.seed_hi, p.step);
    }
    let goal = u * total;
    // The owner of the goal: the first chunk whose inclusive sum exceeds it.
    red_u[lid] = select(0xffffffffu, lid, red_f[lid] > goal && local > 0.0);
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st >>= 1u) {
      if (lid < st) {
        red_u[lid] = min(red_u[lid], red_u[lid + st]);
      }
      workgroupBarrier();
    }
    var owner = red_u[0];
    workgroupBarrier();
    // Rounding may put the goal past every chunk: take the last chunk with mass.
    red_u[lid] = select(0u, lid + 1u, local > 0.0);
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st >>= 1u) {
      if (lid < st) {
        red_u[lid] = max(red_u[lid], red_u[lid + st]);
      }
      workgroupBarrier();
    }
    if (owner == 0xffffffffu) {
      owner = red_u[0] - 1u;
    }
    workgroupBarrier();
    if (lid == owner) {
      var acc = before;
      var pick = last_nonzero;
      for (var i = begin; i < end; i++) {
        let e = select(0.0, exp(work[base + i] - m), work[base + i] > NEG_INF);
        acc += e;
        if (e > 0.0 && acc > goal) {
          pick = i;
          break;
        }
      }
      red_u[0] = pick;
    }
    workgroupBarrier();
    chosen = red_u[0];
    workgroupBarrier();
    if (g.write_probs != 0u) {
      for (var i = lid; i < g.vocab; i += WG) {
        work[base + i] = select(0.0, exp(work[base + i] - m), work[base + i] > NEG_INF) / total;
      }
    }
  }

  // 6. raw logprobs of the chosen token and of the top alternatives.
  var rm = NEG_INF;
  for (var i = lid; i < g.vocab; i += WG) {
    rm = max(rm, logits[base + i]);
  }
  rm = max_f(lid, rm);
  var rz = 0.0;
  for (var i = lid; i < g.vocab; i += WG) {
    rz += exp(logits[base + i] - rm);
  }
  let lse = rm + log(sum_f(lid, rz));
  let top_base = s * 2u * MAX_TOP;
  let n_top = min(p.logprobs, MAX_TOP);
  for (var j = 0u; j < n_top; j++) {
    let r = argmax_row(lid, base, false, top_base, j);
    if (lid == 0u) {
      top[top_base + j] = r.x;
      top[top_base + MAX_TOP + j] = bitcast<u32>(bitcast<f32>(r.y) - lse);
    }
    storageBarrier();
    workgroupBarrier();
  }
  if (lid == 0u) {
    result[2u * s] = chosen;
    result[2u * s + 1u] = bitcast<u32>(logits[base + chosen] - lse);
  }
}
