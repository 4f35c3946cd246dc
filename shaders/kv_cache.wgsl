// Paged KV cache write: scatter this step's K and V rows ([T, kv_heads, head_dim] f32) into the
// cache ([blocks, block_size, kv_heads, head_dim]) at per-token slots (block * block_size +
// offset). A slot of 0xFFFFFFFF is padding and is skipped. The cache holds f32 bits, or with
// KV_F16 f16 pairs packed in u32 (pack2x16float; then `row` is even and each thread writes one
// pair).

struct Params {
  tokens: u32,
  row: u32, // kv_heads * head_dim
  _pad0: u32,
  _pad1: u32,
}

override KV_F16: bool = false;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> slots: array<u32>;
@group(0) @binding(4) var<storage, read_write> k_cache: array<u32>;
@group(0) @binding(5) var<storage, read_write> v_cache: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let width = select(1u, 2u, KV_F16); // elements per thread
  let i = (gid.x + gid.y * nwg.x * 256u) * width;
  if (i >= p.tokens * p.row) {
    return;
  }
  let t = i / p.row;
  let slot = slots[t];
  if (slot == 0xffffffffu) {
    return;
  }
  let dst = slot * p.row + i % p.row;
  if (KV_F16) {
    k_cache[dst / 2u] = pack2x16float(vec2<f32>(k[i], k[i + 1u]));
    v_cache[dst / 2u] = pack2x16float(vec2<f32>(v[i], v[i + 1u]));
  } else {
    k_cache[dst] = bitcast<u32>(k[i]);
    v_cache[dst] = bitcast<u32>(v[i]);
  }
}
