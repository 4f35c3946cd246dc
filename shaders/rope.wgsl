// Rotary position embedding, HF rotate-half convention: for i < head_dim/2, (x_i, x_{i+half})
// rotates by angle pos * inv_freq[i]. The angle is taken in turns, exactly: freqs[i] holds
// inv_freq[i] / 2pi as a 64-bit binary fraction (high word, low word; whole turns dropped), so
// pos * freqs[i] modulo one turn is integer arithmetic, and only the last step, a quarter turn
// to radians, rounds. An f32 angle pos * inv_freq[i] errs by half an ulp of the angle, which
// grows with the position (3e-5 rad at 1000, 4e-3 rad at 100000), and reducing it by pi/2 in f32
// loses as much again.
//
//   main:    in place on x [T, heads, head_dim].
//   rope_kv: from one fused q/k/v product qkv [T, (heads + 2 kv_heads) * head_dim] (q, then k,
//            then v per token): rotated q to x [T, heads, head_dim], rotated k and plain v into
//            the paged KV cache [blocks, block_size, kv_heads, head_dim] at slots[t] (block *
//            block_size + offset; 0xFFFFFFFF is padding, skipped). The cache holds f32 bits, or
//            with KV_F16 f16 pairs packed in u32 (pack2x16float: core WGSL, no shader-f16).
//            Only the first rotary_dim elements of each q and k head rotate (rotate-half within
//            them, freqs[0 .. rotary_dim/2)); the rest pass through: rotary_dim = head_dim is
//            full RoPE, 0 none (a layer without RoPE still writes its k and v to the cache).
//            The rotated elements are multiplied by rotary_scale (LongRoPE's attention factor;
//            1, exact, otherwise).

struct Params {
  tokens: u32,
  heads: u32,
  head_dim: u32,
  kv_heads: u32, // rope_kv only (main's callers leave it 0)
  rotary_dim: u32, // rope_kv only: even, at most head_dim
  rotary_scale: f32, // rope_kv only
}

override KV_F16: bool = false;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read> positions: array<u32>;
@group(0) @binding(3) var<storage, read> freqs: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read> qkv: array<f32>;
@group(0) @binding(5) var<storage, read> slots: array<u32>;
@group(0) @binding(6) var<storage, read_write> k_cache: array<u32>;
@group(0) @binding(7) var<storage, read_write> v_cache: array<u32>;

// The angle pos * inv_freq[i] modulo one turn, in units of 2^-32 turn: pos * (hi + lo / 2^32)
// with u32 products that wrap (whole turns drop out) and the high word of pos * lo from 16-bit
// halves (WGSL has no widening multiply). Truncating the low word errs by less than 2^-32 turn.
fn turns(pos: u32, i: u32) -> u32 {
  let f = freqs[i];
  let ph = pos >> 16u;
  let pl = pos & 0xffffu;
  let fh = f.y >> 16u;
  let fl = f.y & 0xffffu;
  let cross1 = ph * fl;
  let cross2 = pl * fh;
  let mid = ((pl * fl) >> 16u) + (cross1 & 0xffffu) + (cross2 & 0xffffu);
  let carry = ph * fh + (cross1 >> 16u) + (cross2 >> 16u) + (mid >> 16u);
  return pos * f.x + carry;
}

// sin and cos of u * 2^-32 turn to about one ulp. WGSL's built-ins only promise 2^-11 absolute
// error on [-pi, pi] (SwiftShader is near that bound), too coarse for logits within 1e-5 of a
// float64 reference. The nearest quarter turn is the top two bits of u + 1/8 turn; the rest,
// within 1/8 turn of it, becomes radians (to f32 and times 2pi / 2^32: under 5e-8 rad) for
// Taylor polynomials on [-pi/4, pi/4].
fn sincos(u: u32) -> vec2<f32> {
  let v = u + 0x20000000u;
  let r = f32(bitcast<i32>(v & 0x3fffffffu) - 0x20000000) * 1.4629180792671596e-9; // 2pi / 2^32
  let r2 = r * r;
  let s = r + r * r2 * (-0.16666666666666666 + r2 * (0.008333333333333333 + r2 * (-1.984126984126984e-4 + r2 * 2.755731922398589e-6)));
  let c = 1.0 + r2 * (-0.5 + r2 * (0.041666666666666664 + r2 * (-0.001388888888888889 + r2 * 2.48015873015873e-5)));
  let quadrant = v >> 30u;
  if (quadrant == 0u) {
    return vec2<f32>(s, c);
  }
  if (quadrant == 1u) {
    return vec2<f32>(c, -s);
  }
  if (quadrant == 2u) {
    return vec2<f32>(-s, -c);
  }
  return vec2<f32>(-c, s);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let half = p.head_dim / 2u;
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.tokens * p.heads * half) {
    return;
  }
  let j = i % half;
  let th = i / half; // token * heads + head
  let t = th / p.heads;
  let base = th * p.head_dim;
  let sc = sincos(turns(positions[t], j));
  let s = sc.x;
  let c = sc.y;
  let x1 = x[base + j];
  let x2 = x[base + j + half];
  x[base + j] = x1 * c - x2 * s;
  x[base + j + half] = x2 * c + x1 * s;
}

// Element e (< head_dim) of the rotated head whose row starts at qkv[base], at position pos.
fn rotated(base: u32, e: u32, pos: u32) -> f32 {
  if (e >= p.rotary_dim) {
    return qkv[base + e];
  }
  let half = p.rotary_dim / 2u;
  let i = e % half;
  let sc = sincos(turns(pos, i));
  let x1 = qkv[base + i];
  let x2 = qkv[base + i + half];
  return select(x2 * sc.y + x1 * sc.x, x1 * sc.y - x2 * sc.x, e < half) * p.rotary_scale;
}

// One thread per element pair (2m, 2m+1) of a token's qkv row (head_dim is even), so that an
// f16 cache word is written by exactly one thread.
@compute @workgroup_size(256)
fn rope_kv(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let row_pairs = (p.heads + 2u * p.kv_heads) * p.head_dim / 2u;
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.tokens * row_pairs) {
    return;
  }
  let t = i / row_pairs;
  let c = (i % row_pairs) * 2u; // column in the qkv row
  let q_cols = p.heads * p.head_dim;
  let kv_cols = p.kv_heads * p.head_dim;
  let row = t * (q_cols + 2u * kv_cols);
  let pos = positions[t];
  if (c < q_cols) {
    let base = row + c - c % p.head_dim;
    let e = c % p.head_dim;
    x[t * q_cols + c] = rotated(base, e, pos);
    x[t * q_cols + c + 1u] = rotated(base, e + 1u, pos);
    return;
  }
  let slot = slots[t];
  if (slot == 0xffffffffu) {
    return;
  }
  var pair: vec2<f32>;
  var kc = c - q_cols; // column within k (or v)
  let is_k = kc < kv_cols;
  if (is_k) {
    let base = row + c - kc % p.head_dim;
    let e = kc % p.head_dim;
    pair = vec2<f32>(rotated(base, e, pos), rotated(base, e + 1u, pos));
  } else {
    kc -= kv_cols;
    pair = vec2<f32>(qkv[row + c], qkv[row + c + 1u]);
  }
  let dst = slot * kv_cols + kc;
  if (KV_F16) {
    let w = pack2x16float(pair);
    if (is_k) {
      k_cache[dst / 2u] = w;
    } else {
      v_cache[dst / 2u] = w;
    }
  } else {
    let w = bitcast<vec2<u32>>(pair);
    if (is_k) {
      k_cache[dst] = w.x;
      k_cache[dst + 1u] = w.y;
    } else {
      v_cache[dst] = w.x;
      v_cache[dst + 1u] = w.y;
    }
  }
}
