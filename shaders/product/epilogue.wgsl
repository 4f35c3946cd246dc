// What the product kernels (product/matvec.wgsl, product/gemm.wgsl) share after the dot products:
// the 32-weight dot product of a decoded slice, and the epilogue of one output. Needs the
// kernel's uniform `p` (fields ldy, y0, flags, scale), its bindings `bias` (f32) and `y`, and
// the override GATED; the gated activation is lib/gate_act's (override ACT).
//! import lib/gate_act
//! import lib/dot

// Output (m, n) from its product r (its up product r2 with GATED), already scaled by the norm:
// y[m * ldy + y0 + n] = (r (+ bias[y0 + n] with flag bit 0)) * scale (+ y with bit 2, the
// residual add), or with GATED act(r) * r2 (SwiGLU or GeGLU, as ACT says). A scale of 1 (the
// callers' default) is exact.
fn finish(m: u32, n: u32, r: f32, r2: f32) {
  let o = m * p.ldy + p.y0 + n;
  if (GATED) {
    y[o] = gate_act(r) * r2;
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
