// The GPU sampler: one workgroup per sequence over its logits row [V].
// Order (as HF's logits processors, then vLLM-style penalties before temperature):
//   banned / allowed masks → repetition penalty (tokens seen in prompt or output) →
//   frequency and presence penalties (output counts) → temperature → top-k → top-p → min-p →
//   draw (inverse CDF over token ids with a uniform u) or greedy argmax (temperature 0 / top_k 1).
// Logprobs (the chosen token's and the top alternatives') are those of the distribution the token
// is drawn from (vLLM's `processed_logprobs`): log(kept / total) over the tokens every mask and
// truncation keeps, after penalties and temperature. Temperature 0 reports the distribution at
// temperature 1 after masks and penalties (no truncation); top_k 1, the argmax alone (logprob 0).
// A token that cannot be drawn is never listed: a shorter list ends with NONE.
// top-k and top-p keep {key >= t} over the order-preserving u32 keys of the f32 values, so ties
// are kept as HF keeps them and nothing needs sorting. t is found by a radix select: four rounds
// of 256-bucket histograms over the key's bytes, high to low, each narrowing to the bucket where
// the running count (top-k) or probability mass (top-p) from the top reaches its goal. Masses are
// summed as 64-bit fixed point (exp(l - max) * 2^44) with integer atomics: exact, so the result
// does not depend on the order the atomics land in (four passes where a 32-step bisection took
// 32, each with an exp per token for top-p).
// Guided decoding (TOKEN_MASK): each sequence's token bitmask row (lib/token_mask) is applied to
// the logits as they are read, so a forbidden token is -inf for every step below, greedy, draws
// and logprobs alike, as every other mask. The same mask may instead be applied by the
// `token_mask` pass before this kernel, with TOKEN_MASK off. A row that leaves no token (masks,
// bans and the bitmask together) yields NONE as its token.

//! import lib/token_mask
//! import sampling/numbers
//! import sampling/radix

override TOKEN_MASK: bool = false;

const WG: u32 = 256u;
const NEG_INF: f32 = -3.4028234e38;
const MAX_TOP: u32 = 20u;
const NONE: u32 = 0xffffffffu;
const RADIX: u32 = 256u; // == WG: each invocation clears one bucket
const GROUPS: u32 = 16u; // buckets are scanned in GROUPS groups of RADIX / GROUPS
const CAP: u32 = 2048u; // candidates a radix round may gather into workgroup memory

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
var<workgroup> red_g: array<f32, WG>;
var<workgroup> red_u: array<u32, WG>;
var<workgroup> hist_lo: array<atomic<u32>, RADIX>;
var<workgroup> hist_hi: array<atomic<u32>, RADIX>;
var<workgroup> part: array<vec2<u32>, GROUPS>;
var<workgroup> sel: Sel;
var<workgroup> cand: array<f32, CAP>;
var<workgroup> n_cand: atomic<u32>;

// Logit `i` of sequence `s` (row `base`) as the sampler sees it: -inf when its bitmask forbids it.
fn logit(s: u32, base: u32, i: u32) -> f32 {
  let v = logits[base + i];
  if (TOKEN_MASK && !token_allowed(s * g.words, i)) {
    return NEG_INF;
  }
  return v;
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

// Reduce each invocation's (best value, its id) to the row's argmax (ties: lowest id; NONE when
// no invocation has one). Returns (id, value bits), uniform across the workgroup.
fn argmax_reduce(lid: u32, best: f32, best_id: u32) -> vec2<u32> {
  red_f[lid] = best;
  red_u[lid] = best_id;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      let ov = red_f[lid + s];
      let oi = red_u[lid + s];
      if (oi != NONE && (red_u[lid] == NONE || ov > red_f[lid] || (ov == red_f[lid] && oi < red_u[lid]))) {
        red_f[lid] = ov;
        red_u[lid] = oi;
      }
    }
    workgroupBarrier();
  }
  let r = vec2<u32>(workgroupUniformLoad(&red_u[0]), bitcast<u32>(workgroupUniformLoad(&red_f[0])));
  workgroupBarrier();
  return r;
}

fn bit(map_base: u32, i: u32, from_allowed: bool) -> bool {
  let w = masks[map_base + select(g.words, 0u, from_allowed) + i / 32u];
  return ((w >> (i % 32u)) & 1u) != 0u;
}

// The tokens a row's distribution holds: those that survive the masks (> NEG_INF), top-k and top-p
// (key >= t) and min-p (v - m >= cut); `only` != NONE keeps that token alone (top_k 1).
struct Keep {
  t: u32,
  m: f32, // the row's largest processed logit
  min_p: bool,
  cut: f32, // ln(min_p)
  only: u32,
}

fn keeps(k: Keep, i: u32, v: f32) -> bool {
  return v > NEG_INF && key(v) >= k.t && !(k.min_p && v - k.m < k.cut) &&
    (k.only == NONE || i == k.only);
}

// Token `i`'s unnormalised probability in the distribution: exp(v - m), or 0 when not kept.
fn kept(k: Keep, i: u32, v: f32) -> f32 {
  return select(0.0, exp(v - k.m), keeps(k, i, v));
}

// 1. masks and penalties, then temperature, into work[]; (top-k) the histogram of the keys' high
//    bytes. Returns the argmax of work[] as (id, value bits).
fn process_row(lid: u32, s: u32, p: SeqParams, greedy: bool, use_top_k: bool) -> vec2<u32> {
  let base = s * g.vocab;
  let map_base = s * 2u * g.words;
  let inv_t = select(1.0 / p.temperature, 1.0, greedy);
  if (use_top_k) {
    clear_hist(lid);
    workgroupBarrier();
  }
  var best = NEG_INF;
  var best_id = NONE;
  for (var i = lid; i < g.vocab; i += WG) {
    let raw = logit(s, base, i);
    var l = raw;
    let c = counts[base + i];
    if ((c & 0x80000000u) != 0u && p.repetition_penalty != 1.0) {
      l = select(l * p.repetition_penalty, l / p.repetition_penalty, l > 0.0);
    }
    let n = f32(c & 0x7fffffffu);
    l -= p.frequency_penalty * n + select(0.0, p.presence_penalty, n > 0.0);
    l = select(l * inv_t, l, greedy);
    // raw <= NEG_INF: masked by the token bitmask (or -inf from the model): kept at NEG_INF
    // whatever the penalties and temperature do to it.
    if (raw <= NEG_INF || ((p.flags & FLAG_ALLOWED) != 0u && !bit(map_base, i, true)) ||
        ((p.flags & FLAG_BANNED) != 0u && bit(map_base, i, false))) {
      l = NEG_INF;
    }
    work[base + i] = l;
    if (best_id == NONE || l > best) {
      best = l;
      best_id = i;
    }
    if (use_top_k) {
      atomicAdd(&hist_lo[key(l) >> 24u], 1u);
    }
  }
  return argmax_reduce(lid, best, best_id);
}

// 5. the draw by inverse CDF in token-id order with the row's uniform u: each invocation owns a
//    contiguous chunk. Returns (the token, the bits of the kept mass's total).
fn draw(lid: u32, base: u32, p: SeqParams, k: Keep) -> vec2<u32> {
  let chunk = (g.vocab + WG - 1u) / WG;
  let begin = min(g.vocab, lid * chunk);
  let end = min(g.vocab, begin + chunk);
  var local = 0.0;
  var last_nonzero = NONE;
  for (var i = begin; i < end; i++) {
    let e = kept(k, i, work[base + i]);
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
  // The owner of the goal: the first chunk whose inclusive sum exceeds it; rounding may put
  // the goal past every chunk: then the last chunk with mass.
  red_u[lid] = select(NONE, lid, red_f[lid] > goal && local > 0.0);
  red_g[lid] = select(0.0, f32(lid + 1u), local > 0.0);
  workgroupBarrier();
  for (var st = WG / 2u; st > 0u; st >>= 1u) {
    if (lid < st) {
      red_u[lid] = min(red_u[lid], red_u[lid + st]);
      red_g[lid] = max(red_g[lid], red_g[lid + st]);
    }
    workgroupBarrier();
  }
  var owner = red_u[0];
  if (owner == NONE) {
    owner = u32(red_g[0]) - 1u;
  }
  workgroupBarrier();
  if (lid == owner) {
    var acc = before;
    var pick = last_nonzero;
    for (var i = begin; i < end; i++) {
      let e = kept(k, i, work[base + i]);
      acc += e;
      if (e > 0.0 && acc > goal) {
        pick = i;
        break;
      }
    }
    red_u[0] = pick;
  }
  workgroupBarrier();
  let chosen = select(red_u[0], 0u, red_u[0] == NONE); // nothing kept: token 0, as before
  workgroupBarrier();
  return vec2<u32>(chosen, bitcast<u32>(total));
}

// The next kept token in (value descending, id ascending) order after (`after_v`, `after_i`)
// (`after_i` NONE: the first), as (id, value bits); id NONE when no kept token is left.
fn next_top(lid: u32, base: u32, k: Keep, after_v: f32, after_i: u32) -> vec2<u32> {
  var best = NEG_INF;
  var best_id = NONE;
  for (var i = lid; i < g.vocab; i += WG) {
    let v = work[base + i];
    let later = after_i == NONE || v < after_v || (v == after_v && i > after_i);
    if (later && keeps(k, i, v) && (best_id == NONE || v > best)) {
      best = v;
      best_id = i;
    }
  }
  return argmax_reduce(lid, best, best_id);
}

// 6. logprobs of the chosen token and of the top alternatives under the distribution: log(kept /
//    total) = v - m - log(total) for a kept token. The list stops at the last kept token, NONE
//    after it.
fn report(lid: u32, s: u32, p: SeqParams, k: Keep, chosen: u32, total: f32, none_left: bool) {
  let base = s * g.vocab;
  let lz = k.m + log(total);
  let top_base = s * 2u * MAX_TOP;
  let n_top = select(min(p.logprobs, MAX_TOP), 0u, none_left);
  var after = vec2<u32>(NONE, 0u);
  var listed = 0u;
  for (; listed < n_top; listed++) {
    let r = next_top(lid, base, k, bitcast<f32>(after.y), after.x);
    if (r.x == NONE) {
      break;
    }
    if (lid == 0u) {
      top[top_base + listed] = r.x;
      top[top_base + MAX_TOP + listed] = bitcast<u32>(bitcast<f32>(r.y) - lz);
    }
    after = r;
  }
  if (lid == 0u) {
    for (var j = listed; j < MAX_TOP; j++) {
      top[top_base + j] = NONE;
    }
    if (none_left) {
      result[2u * s] = NONE;
      result[2u * s + 1u] = bitcast<u32>(NEG_INF);
    } else {
      result[2u * s] = chosen;
      result[2u * s + 1u] = bitcast<u32>(work[base + chosen] - lz);
    }
  }
}

@compute @workgroup_size(WG)
fn sample(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let s = wid.x;
  if (s >= g.seqs) {
    return;
  }
  let p = params[s];
  let base = s * g.vocab;
  let greedy = p.temperature == 0.0 || p.top_k == 1u;
  let use_top_k = !greedy && p.top_k > 1u && p.top_k < g.vocab;
  let am = process_row(lid, s, p, greedy, use_top_k);
  let m = max(bitcast<f32>(am.y), NEG_INF);
  // Nothing left to draw: every token masked (a finite logit is always above NEG_INF).
  let none_left = !(bitcast<f32>(am.y) > NEG_INF);
  var k = Keep(0u, m, false, 0.0, NONE);
  var chosen = am.x;
  var total = 1.0;
  if (greedy && p.temperature != 0.0) {
    k.only = chosen; // top_k 1: the argmax alone
  } else if (greedy) {
    // temperature 0: every token the masks leave, at temperature 1.
    var local = 0.0;
    for (var i = lid; i < g.vocab; i += WG) {
      local += kept(k, i, work[base + i]);
    }
    total = sum_f(lid, local);
  } else {
    // 2. top-k: keep key >= the k-th largest key (ties kept).
    if (use_top_k) {
      k.t = radix_select(lid, base, p.top_k, -1.0, 0u, m);
    }
    // 3. top-p: keep a token when the mass strictly above it is below top_p, i.e. keep
    //    {key >= t} for the smallest t with mass(key > t) < top_p.
    if (p.top_p < 1.0) {
      k.t = max(k.t, radix_select(lid, base, 0u, p.top_p, k.t, m));
    }
    // 4. min-p: drop p < min_p * p_max, i.e. l - l_max < ln(min_p).
    if (p.min_p > 0.0) {
      k.min_p = true;
      k.cut = log(p.min_p);
    }
    let d = draw(lid, base, p, k);
    chosen = d.x;
    total = bitcast<f32>(d.y);
  }
  report(lid, s, p, k, chosen, total, none_left);
  if (!greedy && g.write_probs != 0u) {
    // The final distribution, once `report` has read work[].
    storageBarrier();
    for (var i = lid; i < g.vocab; i += WG) {
      work[base + i] = select(0.0, kept(k, i, work[base + i]) / total, total > 0.0);
    }
  }
}
