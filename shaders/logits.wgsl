// A row of logits from another runtime's output buffer (onnxruntime-web's `logits`), f32 or f16,
// copied into a row of an f32 buffer the sampler reads. The source is bound as u32 words so f16
// values are unpacked with unpack2x16float: no `enable f16`, no shader-f16 feature needed.

// Source element type: false = f32, true = f16 (two per word, element 2k in the low half).
override SRC_F16: bool = false;

struct Params {
  count: u32, // elements to copy (the vocabulary)
  src_offset: u32, // first source element
  dst_offset: u32, // first destination element
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return gid.x + gid.y * nwg.x * 256u;
}

fn load(e: u32) -> f32 {
  if (SRC_F16) {
    let pair = unpack2x16float(src[e >> 1u]);
    return select(pair.x, pair.y, (e & 1u) == 1u);
  }
  return bitcast<f32>(src[e]);
}

// dst[dst_offset + i] = src[src_offset + i] for i < count, widened to f32.
@compute @workgroup_size(256)
fn copy_row(@builtin(global_invocation_id) gid: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = index(gid, nwg);
  if (i >= p.count) {
    return;
  }
  dst[p.dst_offset + i] = load(p.src_offset + i);
}
