// What attention.wgsl and attention_rows.wgsl share: the uniform's layout (one uniform serves
// both files and the merge), the soft-cap, the first key a sliding window lets a query see, and
// the softmax's denominator with an attention sink. The importing file declares `p` (Params) and
// `sinks` (f32 [heads], read with SINKS).

override SINKS: bool = false; // sinks[heads] join each head's softmax

struct Params {
  tokens: u32,
  heads: u32,
  kv_heads: u32,
  head_dim: u32,
  block_size: u32,
  splits: u32,
  scale: f32,
  chunks: u32, // head chunks per kv head
  lanes: u32, // attention.wgsl: dim lanes, min(head_dim / 2, its WG)
  key_lanes: u32, // attention.wgsl: its WG / lanes
  window: u32, // keys a query sees (itself included); 0: every earlier key
  softcap: f32, // 0: none
}

// cap · tanh(s / cap) with cap = p.softcap, or s when there is none. tanh(x) = 1 - 2/(e^2x + 1):
// e^2x overflows to +inf for large x, which gives 1; |x| is clamped where tanh is ±1 in f32.
fn capped(s: f32) -> f32 {
  if (p.softcap <= 0.0) {
    return s;
  }
  let x = clamp(s / p.softcap, -15.0, 15.0);
  return p.softcap * (1.0 - 2.0 / (exp(2.0 * x) + 1.0));
}

// The first key query position `pos` sees.
fn first_key(pos: u32) -> u32 {
  if (p.window == 0u || pos + 1u <= p.window) {
    return 0u;
  }
  return pos + 1u - p.window;
}

// 1 / the softmax denominator of query head h whose scores have maximum m and sum l of
// exp(s - m): 1 / l, or with SINKS 1 / (l + exp(sinks[h] - m)), taken against M = max(m, sink)
// as exp(m - M) / (l exp(m - M) + exp(sink - M)) so that no exp overflows.
fn normaliser(h: u32, m: f32, l: f32) -> f32 {
  if (!SINKS) {
    return 1.0 / l;
  }
  let sink = sinks[h];
  let top = max(m, sink);
  let e = exp(m - top);
  return e / (l * e + exp(sink - top));
}
