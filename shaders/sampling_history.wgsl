// Penalty counts for the sampler: for each sequence, bit 31 marks a token seen in its prompt
// or output, and bits 0..30 count its occurrences in the output.

const WG: u32 = 256u;

struct HistoryParams {
  seqs: u32,
  vocab: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: HistoryParams;
@group(0) @binding(1) var<storage, read> history: array<u32>;
// per sequence: [start, output_start, end) offsets into history
@group(0) @binding(2) var<storage, read> ranges: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> counts: array<atomic<u32>>;

@compute @workgroup_size(WG)
fn clear_counts(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i < p.seqs * p.vocab) {
    atomicStore(&counts[i], 0u);
  }
}

@compute @workgroup_size(WG)
fn count_history(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let s = wid.x;
  let r = ranges[s];
  for (var i = r.x + lid; i < r.z; i += WG) {
    let t = history[i];
    if (t < p.vocab) {
      let c = &counts[s * p.vocab + t];
      atomicOr(c, 0x80000000u);
      if (i >= r.y) {
        atomicAdd(c, 1u);
      }
    }
  }
}
