// The sampler's radix select over the order-preserving keys (see `sampling.wgsl`'s header):
// 256-bucket histograms of 64-bit masses or counts, the bucket where the running sum from the top
// reaches its goal, and the four rounds. It works on the kernel's workgroup memory and bindings
// (`hist_lo`, `hist_hi`, `part`, `sel`, `cand`, `n_cand`, `work`) and constants (`WG`, `RADIX`,
// `GROUPS`, `CAP`, `NONE`), and uses `sampling/numbers`.

// What a radix round found: the bucket where the running sum from the top reaches `need`
// (NONE: never), the sum of the buckets above it (from every round so far), and `exact` when the
// sum through the bucket is exactly `need` (then the whole bucket is kept and the search ends).
struct Sel {
  bucket: u32,
  exact: u32,
  above: vec2<u32>,
  need: vec2<u32>,
  weight: vec2<u32>, // the bucket's own sum
  gathered: u32, // candidates gathered in the round
}

fn clear_hist(lid: u32) {
  atomicStore(&hist_lo[lid], 0u);
  atomicStore(&hist_hi[lid], 0u);
}

// Add a 64-bit weight to a bucket: the carry out of the low word is counted by the one add
// that wraps it, so the total is exact whatever the order.
fn hist_add(b: u32, w: vec2<u32>) {
  let old = atomicAdd(&hist_lo[b], w.x);
  let hi = w.y + select(0u, 1u, old + w.x < old);
  if (hi != 0u) {
    atomicAdd(&hist_hi[b], hi);
  }
}

fn hist_at(b: u32) -> vec2<u32> {
  return vec2<u32>(atomicLoad(&hist_lo[b]), atomicLoad(&hist_hi[b]));
}

// After a histogram pass: from the top bucket down, the first where `above` plus the running
// sum reaches `need`. With `top_p` >= 0, `need` is top_p times the histogram's total instead.
fn select_bucket(lid: u32, need_in: vec2<u32>, above_in: vec2<u32>, top_p: f32) -> Sel {
  let per = RADIX / GROUPS;
  if (lid < GROUPS) {
    var acc = vec2<u32>(0u);
    for (var j = 0u; j < per; j++) {
      acc = add64(acc, hist_at(lid * per + j));
    }
    part[lid] = acc;
  }
  workgroupBarrier();
  if (lid == 0u) {
    var need = need_in;
    if (top_p >= 0.0) {
      var total = vec2<u32>(0u);
      for (var j = 0u; j < GROUPS; j++) {
        total = add64(total, part[j]);
      }
      need = from_f32(top_p * to_f32(total));
      if (need.x == 0u && need.y == 0u) {
        need.x = 1u;
      }
    }
    var above = above_in;
    var out = Sel(NONE, 0u, above, need, vec2<u32>(0u), atomicLoad(&n_cand));
    for (var j = 0u; j < GROUPS; j++) {
      let grp = GROUPS - 1u - j;
      let next = add64(above, part[grp]);
      if (!ge64(next, need)) {
        above = next;
        continue;
      }
      for (var q = 0u; q < per; q++) {
        let b = grp * per + per - 1u - q;
        let through = add64(above, hist_at(b));
        if (ge64(through, need)) {
          out.bucket = b;
          out.exact = select(0u, 1u, all(through == need));
          out.above = above;
          out.weight = hist_at(b);
          break;
        }
        above = through;
      }
      break;
    }
    sel = out;
  }
  return workgroupUniformLoad(&sel);
}

// Bucket of `k` in the round at `shift`, or NONE when its higher bytes are not `prefix`'s.
fn bucket_of(k: u32, shift: u32, prefix: u32) -> u32 {
  if (shift < 24u && (k >> (shift + 8u)) != (prefix >> (shift + 8u))) {
    return NONE;
  }
  return (k >> shift) & (RADIX - 1u);
}

// The radix select. Counting (top_p < 0): the k-th largest key, round 0's histogram built by the
// caller. Mass (top_p >= 0), over the keys >= floor_key: the key of the token where the mass from
// the top first reaches top_p of the whole (0 when it never does). From round 1 on, the round's
// candidates are also gathered into workgroup memory; when they fit, later rounds read only them.
fn radix_select(lid: u32, base: u32, k: u32, top_p: f32, floor_key: u32, m: f32) -> u32 {
  let by_mass = top_p >= 0.0;
  var prefix = 0u;
  var above = vec2<u32>(0u);
  var need = vec2<u32>(k, 0u);
  var listed = false;
  var n = g.vocab;
  var fits = true; // counting: the last bucket chosen fits in cand[]
  for (var r = 0u; r < 4u; r++) {
    let shift = 24u - 8u * r;
    // (round 0 gathers only after top-k, whose survivors are few)
    let gather = (r > 0u || floor_key > 0u) && !listed && fits;
    if (r > 0u || by_mass) {
      clear_hist(lid);
      if (lid == 0u) {
        atomicStore(&n_cand, 0u);
      }
      workgroupBarrier();
      for (var i = lid; i < n; i += WG) {
        var v: f32;
        if (listed) {
          v = cand[i];
        } else {
          v = work[base + i];
        }
        let kv = key(v);
        let b = bucket_of(kv, shift, prefix);
        if (b == NONE || kv < floor_key) {
          continue;
        }
        if (!by_mass) {
          atomicAdd(&hist_lo[b], 1u);
        } else if (v > NEG_INF) {
          let w = mass(exp(v - m));
          if ((w.x | w.y) != 0u) {
            hist_add(b, w);
          }
        }
        if (gather) {
          let slot = atomicAdd(&n_cand, 1u);
          if (slot < CAP) {
            cand[slot] = v;
          }
        }
      }
      workgroupBarrier();
    }
    let s = select_bucket(lid, need, above, select(-1.0, top_p, by_mass && r == 0u));
    if (s.bucket == NONE) {
      break; // mass: the whole is below top_p (round 0), keep all; counting: not reached
    }
    prefix |= s.bucket << shift;
    above = s.above;
    need = s.need;
    if (s.exact != 0u) {
      break;
    }
    if (gather && s.gathered <= CAP) {
      listed = true;
      n = s.gathered;
    }
    fits = by_mass || s.weight.x <= CAP;
  }
  return prefix;
}
