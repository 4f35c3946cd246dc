// The gated MLP's activation of a gate product g, picked by the override ACT: 0 SiLU (SwiGLU),
// 1 GELU with the tanh approximation (GeGLU). GELU-tanh is computed as g·sigmoid(2u), the same
// function as g/2·(1 + tanh(u)) with u = √(2/π)(g + 0.044715 g³), but without the cancellation
// of 1 + tanh(u) for negative u, and with no tanh (whose exp form overflows on some backends).
override ACT: u32 = 0u;

fn gate_act(g: f32) -> f32 {
  if (ACT == 1u) {
    let u = 0.7978845608028654 * (g + 0.044715 * g * g * g);
    return g / (1.0 + exp(-2.0 * u));
  }
  return g / (1.0 + exp(-g));
}
