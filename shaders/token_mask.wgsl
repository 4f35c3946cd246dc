// Guided decoding's mask as a pass of its own before the sampler: each invocation takes one
// bitmask word of one sequence and sets the logits of the tokens it forbids to the lowest f32
// (the sampler's -inf), in place. Words of all ones (most of a free row) return at once.

//! import lib/token_mask

const NEG_INF: f32 = -3.4028234e38;

struct Params {
  seqs: u32,
  vocab: u32,
  words: u32, // ceil(vocab / 32)
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// [seqs, vocab]: the logits rows the sampler reads next, row s for the batch's s-th sequence.
@group(0) @binding(1) var<storage, read_write> logits: array<f32>;

@compute @workgroup_size(256)
fn apply_token_mask(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let w = gid.x + gid.y * nwg.x * 256u;
  if (w >= p.seqs * p.words) {
    return;
  }
  let bits = token_mask[w];
  if (bits == 0xffffffffu) {
    return;
  }
  let s = w / p.words;
  let first = (w % p.words) * 32u;
  let n = min(32u, p.vocab - first);
  for (var j = 0u; j < n; j++) {
    if (((bits >> j) & 1u) == 0u) {
      logits[s * p.vocab + first + j] = NEG_INF;
    }
  }
}
