// What both product kernels (product/matvec.wgsl, product/gemm.wgsl) bind: the uniform `p` and
// the activations, bias, output and norm weight. The weights `w` at binding 2 are the format
// fragment's (lib/quant_words or lib/float_words), as is binding 7, the format's table if it has
// one. `main` of both kernels: m, n, k, eps, ldy, y0, flags, scale (product/epilogue's `finish`).
// matvec's `embed`: m tokens of k weights, table rows [row_start, row_end) of `vocab`, each
// weight times scale.
struct Params {
  m: u32,
  n: u32,
  k: u32,
  eps: f32,
  ldy: u32,
  y0: u32,
  row_start: u32,
  row_end: u32,
  vocab: u32,
  flags: u32,
  scale: f32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
// binding 2: the weights `w` (lib/quant_words or lib/float_words); binding 7: the format's table,
// if it has one.
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> gamma: array<vec4<f32>>;
