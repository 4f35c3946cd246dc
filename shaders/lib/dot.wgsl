// The dot product of two 32-element slices (a decoded weight slice and its activations), summed
// as a tree: a CPU adapter runs it as written (no reassociation), and 32 dependent additions
// would make it wait on each.
fn dot8(a: array<vec4<f32>, 8>, b: array<vec4<f32>, 8>) -> f32 {
  let s = ((a[0] * b[0] + a[1] * b[1]) + (a[2] * b[2] + a[3] * b[3])) +
    ((a[4] * b[4] + a[5] * b[5]) + (a[6] * b[6] + a[7] * b[7]));
  return (s.x + s.y) + (s.z + s.w);
}
