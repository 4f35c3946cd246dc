// Token bookkeeping that keeps sampled tokens on the GPU between decode steps.
//
// `store` holds every sequence's tokens (prompt, then output) in a slot of its own.
// gather: the step's input ids are read from the store (ids[i] = store[index[i]]), so a token
//         sampled by the previous step feeds the next one without a trip through the CPU.
// append: each sampled token is written into its sequence's slot (store[at[s]] = result[2s];
//         result holds a token id and its logprob bits per sequence). An index of 0xffffffff
//         skips the sequence.

struct Params {
  count: u32,
  store_len: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;

@group(0) @binding(1) var<storage, read> gather_store: array<u32>;
@group(0) @binding(2) var<storage, read> gather_index: array<u32>;
@group(0) @binding(3) var<storage, read_write> gather_ids: array<u32>;

@compute @workgroup_size(64)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= p.count) {
    return;
  }
  let at = gather_index[i];
  // An index outside the store yields an id no vocabulary has (the embedding zeroes it).
  gather_ids[i] = select(0xffffffffu, gather_store[at], at < p.store_len);
}

@group(0) @binding(4) var<storage, read> append_result: array<u32>;
@group(0) @binding(5) var<storage, read> append_at: array<u32>;
@group(0) @binding(6) var<storage, read_write> append_store: array<u32>;

@compute @workgroup_size(64)
fn append(@builtin(global_invocation_id) gid: vec3<u32>) {
  let s = gid.x;
  if (s >= p.count) {
    return;
  }
  let at = append_at[s];
  if (at < p.store_len) {
    append_store[at] = append_result[2u * s];
  }
}
