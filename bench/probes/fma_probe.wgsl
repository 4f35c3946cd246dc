// Arithmetic probe (the peer a prefill GEMM's FLOP/s is measured against): every thread runs
// `p.rounds` rounds of eight independent vec4<f32> FMA chains on registers (64 FLOPs a round),
// with no memory traffic but one conditional store that keeps the chains alive.

struct Params {
  rounds: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> sink: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = f32(gid.x + gid.y * nwg.x * 256u) * 1e-9;
  let m = vec4<f32>(0.9999, 0.9998, 0.9997, 0.9996);
  let c = vec4<f32>(1e-4, 2e-4, 3e-4, 4e-4);
  var a0 = vec4<f32>(t);
  var a1 = a0 + 0.1;
  var a2 = a0 + 0.2;
  var a3 = a0 + 0.3;
  var a4 = a0 + 0.4;
  var a5 = a0 + 0.5;
  var a6 = a0 + 0.6;
  var a7 = a0 + 0.7;
  for (var i = 0u; i < p.rounds; i++) {
    a0 = fma(a0, m, c);
    a1 = fma(a1, m, c);
    a2 = fma(a2, m, c);
    a3 = fma(a3, m, c);
    a4 = fma(a4, m, c);
    a5 = fma(a5, m, c);
    a6 = fma(a6, m, c);
    a7 = fma(a7, m, c);
  }
  let s = (a0 + a1) + (a2 + a3) + (a4 + a5) + (a6 + a7);
  if (s.x == -1.0) {
    sink[0] = s.y + s.z + s.w;
  }
}
