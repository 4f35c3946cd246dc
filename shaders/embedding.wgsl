// Token embedding gather: out[t, :] = table[ids[t], :] * scale, widening F16/BF16 weights to f32
// (a scale of 1 is exact).
//
// A table too big for one binding is split by rows into chunks, one buffer and one dispatch
// each: this dispatch's buffer holds rows [row_start, row_end) and writes only the tokens whose
// id falls there. An id outside the vocabulary (ids are validated on the CPU first; a gather
// from the token store can still yield one) gets a zero row from the chunk that ends the table.

//! import lib/float_elems

struct Params {
  tokens: u32,
  hidden: u32,
  vocab: u32,
  row_start: u32,
  row_end: u32,
  scale: f32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;
@group(0) @binding(2) var<storage, read> table: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

fn weight(i: u32) -> f32 {
  return float_elem(table[float_word(i)], i);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.tokens * p.hidden) {
    return;
  }
  let t = i / p.hidden;
  let d = i % p.hidden;
  let id = ids[t];
  if (id >= p.row_start && id < p.row_end) {
    out[i] = weight((id - p.row_start) * p.hidden + d) * p.scale;
  } else if (id >= p.vocab && p.row_end == p.vocab) {
    out[i] = 0.0;
  }
}
