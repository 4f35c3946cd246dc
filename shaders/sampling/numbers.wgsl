// The sampler's integer arithmetic: the counter-based RNG (mirrored bit for bit by `rngUniform`
// in TypeScript), order-preserving u32 keys of f32 values, and 64-bit unsigned sums as (lo, hi)
// with the fixed-point probability masses the radix select adds exactly.

fn pcg(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

// The counter-based draw for (seed, step): the same u for the same request and step, whatever
// else is in the batch. Mirrored bit for bit by `rngUniform` in TypeScript.
fn rng_uniform(seed_lo: u32, seed_hi: u32, step: u32) -> f32 {
  let h = pcg(seed_lo ^ pcg(seed_hi ^ pcg(step ^ 0x9e3779b9u)));
  return f32(h >> 8u) * (1.0 / 16777216.0);
}

fn key(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

// 64-bit unsigned integers as (lo, hi).
fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn ge64(a: vec2<u32>, b: vec2<u32>) -> bool {
  return a.y > b.y || (a.y == b.y && a.x >= b.x);
}

fn to_f32(a: vec2<u32>) -> f32 {
  return f32(a.y) * 4294967296.0 + f32(a.x);
}

// A non-negative f32 below 2^64 as a 64-bit integer (truncated).
fn from_f32(x: f32) -> vec2<u32> {
  let hi = floor(x * (1.0 / 4294967296.0));
  return vec2<u32>(u32(x - hi * 4294967296.0), u32(hi));
}

// exp(l - m) in [0, 1] as fixed point with 44 fraction bits (truncated); a row of up to 2^20
// tokens sums below 2^64.
fn mass(e: f32) -> vec2<u32> {
  let s = min(e, 1.0) * 4096.0;
  let hi = floor(s);
  return vec2<u32>(u32((s - hi) * 4294967296.0), u32(hi));
}
