// Paged KV cache write: scatter this step's K and V rows ([T, kv_heads, head_dim]) into the
// cache ([blocks, block_size, kv_heads, head_dim]) at per-token slots (block * block_size +
// offset). A slot of 0xFFFFFFFF is padding and is skipped.

struct Params {
  tokens: u32,
  row: u32, // kv_heads * head_dim
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> slots: array<u32>;
@group(0) @binding(4) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(5) var<storage, read_write> v_cache: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.tokens * p.row) {
    return;
  }
  let t = i / p.row;
  let slot = slots[t];
  if (slot == 0xffffffffu) {
    return;
  }
  let dst = slot * p.row + i % p.row;
  k_cache[dst] = k[i];
  v_cache[dst] = v[i];
}
