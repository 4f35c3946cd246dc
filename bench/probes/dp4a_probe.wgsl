// DP4A probe (bench/probes/dp4a.ts): a Q8_0 matrix-vector product y = W x in two twins of one kernel,
// one thread per output row (the CPU adapters' mapping), differing only in the inner product:
//
// - `dp4a`: x quantized to int8 per 32-element block (`quantize`, a scale per block), each
//   block's 32 products as 8 `dot4I8Packed` of packed int8 words, scaled once per block by
//   d_w * d_x (what ggml-webgpu's MMVQ does);
// - `floats`: each packed word unpacked to 4 floats and dotted with x in f32, scaled by d_w.
//
// W is GGUF Q8_0 byte for byte: 34-byte blocks (f16 d, then 32 int8), so half the blocks' quants
// start 2 bytes into a word and are read as two words and shifted.

struct Params {
  n: u32,
  k: u32,
  _a: u32,
  _b: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> xq: array<u32>; // int8 x, packed [k / 4]
@group(0) @binding(4) var<storage, read_write> xd: array<f32>; // x's scale per block [k / 32]
@group(0) @binding(5) var<storage, read_write> y: array<f32>;

// The 4 bytes of W from byte `b` (any alignment).
fn word(b: u32) -> u32 {
  let i = b >> 2u;
  let s = (b & 3u) * 8u;
  if (s == 0u) {
    return w[i];
  }
  return (w[i] >> s) | (w[i + 1u] << (32u - s));
}

// One thread per 32-element block of x: its scale amax / 127 and the rounded int8 values.
@compute @workgroup_size(64)
fn quantize(@builtin(global_invocation_id) gid: vec3<u32>) {
  let b = gid.x;
  if (b >= p.k / 32u) {
    return;
  }
  var amax = 0.0;
  for (var i = 0u; i < 8u; i++) {
    let v = abs(x[b * 8u + i]);
    amax = max(amax, max(max(v.x, v.y), max(v.z, v.w)));
  }
  let d = amax / 127.0;
  let inv = select(0.0, 1.0 / d, d > 0.0);
  xd[b] = d;
  for (var i = 0u; i < 8u; i++) {
    xq[b * 8u + i] = pack4xI8(vec4<i32>(round(x[b * 8u + i] * inv)));
  }
}

@compute @workgroup_size(64)
fn dp4a(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n = gid.x;
  if (n >= p.n) {
    return;
  }
  let blocks = p.k / 32u;
  var acc = 0.0;
  for (var b = 0u; b < blocks; b++) {
    let base = (n * blocks + b) * 34u;
    let d = unpack2x16float(word(base) & 0xffffu).x;
    var s = 0i;
    for (var i = 0u; i < 8u; i++) {
      s += dot4I8Packed(word(base + 2u + 4u * i), xq[b * 8u + i]);
    }
    acc += d * xd[b] * f32(s);
  }
  y[n] = acc;
}

@compute @workgroup_size(64)
fn floats(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n = gid.x;
  if (n >= p.n) {
    return;
  }
  let blocks = p.k / 32u;
  var acc = 0.0;
  for (var b = 0u; b < blocks; b++) {
    let base = (n * blocks + b) * 34u;
    let d = unpack2x16float(word(base) & 0xffffu).x;
    var s = 0.0;
    for (var i = 0u; i < 8u; i++) {
      s += dot(vec4<f32>(unpack4xI8(word(base + 2u + 4u * i))), x[b * 8u + i]);
    }
    acc += d * s;
  }
  y[n] = acc;
}
