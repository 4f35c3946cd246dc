// Bandwidth probe (the peer the matvec is measured against): every thread reads eight
// 16-byte values in flight and folds them into one word, so only reads cost anything.

struct Params {
  vecs: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> sink: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let threads = nwg.x * nwg.y * 256u;
  let t = gid.x + gid.y * nwg.x * 256u;
  var acc = vec4<u32>(0u);
  var i = t;
  loop {
    if (i >= p.vecs) {
      break;
    }
    var v: array<vec4<u32>, 8>;
    for (var u = 0u; u < 8u; u++) {
      let j = i + u * threads;
      if (j < p.vecs) {
        v[u] = src[j];
      }
    }
    for (var u = 0u; u < 8u; u++) {
      acc ^= v[u];
    }
    i += 8u * threads;
  }
  if (all(acc == vec4<u32>(0x12345678u))) {
    sink[0] = 1u;
  }
}
