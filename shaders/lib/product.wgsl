// What the product kernels (matvec_quant.wgsl, gemm_quant.wgsl) share after the dot products:
// the 32-weight dot product of a decoded slice, and the epilogue of one output. Needs the
// kernel's uniform `p` (fields ldy, y0, flags, scale), its bindings `bias` (f32) and `y`, and the
// override SWIGLU.

// The dot product of two slices, summed as a tree: a CPU adapter runs it as written (no
// reassociation), and 32 dependent additions would make it wait on each.
fn dot8(a: array<vec4<f32>, 8>, b: array<vec4<f32>, 8>) -> f32 {
  let s = ((a[0] * b[0] + a[1] * b[1]) + (a[2] * b[2] + a[3] * b[3])) +
    ((a[4] * b[4] + a[5] * b[5]) + (a[6] * b[6] + a[7] * b[7]));
  return (s.x + s.y) + (s.z + s.w);
}

// Output (m, n) from its product r (its up product r2 with SWIGLU), already scaled by the norm:
// y[m * ldy + y0 + n] = (r (+ bias[y0 + n] with flag bit 0)) * scale (+ y with bit 2, the
// residual add), or with SWIGLU silu(r) * r2. A scale of 1 (the callers' default) is exact.
fn finish(m: u32, n: u32, r: f32, r2: f32) {
  let o = m * p.ldy + p.y0 + n;
  if (SWIGLU) {
    y[o] = r / (1.0 + exp(-r)) * r2;
    return;
  }
  var v = r;
  if ((p.flags & 1u) != 0u) {
    v += bias[p.y0 + n];
  }
  v *= p.scale;
  if ((p.flags & 4u) != 0u) {
    v += y[o];
  }
  y[o] = v;
}
