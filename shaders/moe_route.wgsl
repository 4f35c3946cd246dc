// Mixture-of-experts routing, one thread per token: the softmax of the token's router logits
// [experts], its top_k experts (most probable first; a tie goes to the lower index) and their
// probabilities, renormalised to sum 1 over the chosen ones when `norm` is set.
//
// The k-th pick is the best expert strictly after the (k-1)-th in the order (logit descending,
// index ascending), so no per-thread list of the experts taken is needed: top_k passes over the
// logits, any expert count.

override WG: u32 = 64u;

struct Params {
  tokens: u32,
  experts: u32,
  top_k: u32,
  norm: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> ids: array<u32>;
@group(0) @binding(3) var<storage, read_write> weights: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = gid.x + gid.y * nwg.x * WG;
  if (t >= p.tokens) {
    return;
  }
  let o = t * p.experts;
  var top = logits[o];
  for (var e = 1u; e < p.experts; e++) {
    top = max(top, logits[o + e]);
  }
  var sum = 0.0;
  for (var e = 0u; e < p.experts; e++) {
    sum += exp(logits[o + e] - top);
  }
  var chosen = 0.0;
  var prev_v = 0.0;
  var prev_i = 0u;
  for (var j = 0u; j < p.top_k; j++) {
    var best_i = p.experts;
    var best_v = 0.0;
    for (var e = 0u; e < p.experts; e++) {
      let v = logits[o + e];
      let after = j == 0u || v < prev_v || (v == prev_v && e > prev_i);
      if (after && (best_i == p.experts || v > best_v)) {
        best_i = e;
        best_v = v;
      }
    }
    let w = exp(best_v - top);
    // Clamped: with NaN logits no expert compares as best, and the index must stay in range.
    ids[t * p.top_k + j] = min(best_i, p.experts - 1u);
    weights[t * p.top_k + j] = w;
    chosen += w;
    prev_v = best_v;
    prev_i = best_i;
  }
  let denom = select(sum, chosen, p.norm != 0u);
  for (var j = 0u; j < p.top_k; j++) {
    weights[t * p.top_k + j] /= denom;
  }
}
