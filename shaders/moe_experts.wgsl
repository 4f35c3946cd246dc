// The experts of a mixture-of-experts MLP, run for each token's routed experts only (the ids and
// weights `moe_route.wgsl` wrote, [tokens, top_k]). Composed per weight format like the product
// kernels (`moe_experts:format=<fragment>` imports shaders/quant/<fragment>.wgsl): the expert
// weights stay in their GGUF blocks (or float rows), dequantized in registers.
//! import quant/{format}
//! import lib/dot
//
// The experts' matrices are slabs of rows in one buffer each, so expert e's rows sit at a byte
// offset computed from e:
// - `gate_up`: [experts · 2·inter, hidden], expert e's gate rows then its up rows (rows
//   e·2·inter + r and e·2·inter + inter + r). One thread per (token, route j, row r):
//     act[t, j, r] = silu(s·Σₖ x[t,k]·g[k]·G_e[r,k]) · s·Σₖ x[t,k]·g[k]·U_e[r,k]
//   with the MLP's RMSNorm folded in (g its weight, s = 1/sqrt(mean_k x[t,k]² + eps)).
// - `down`: [experts · hidden, inter], expert e's rows at e·hidden. One thread per (token,
//   output h), summing over its routes:
//     x[t, h] += Σⱼ weight[t, j] · Σᵣ act[t, j, r]·D_e[h, r]
//   (one thread owns each output, so the residual add needs no atomics).
// Each thread walks whole weight rows, 32 elements (one slice of the format) at a time.

override WG: u32 = 64u;

struct Params {
  tokens: u32,
  hidden: u32,
  inter: u32,
  top_k: u32,
  eps: f32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// gate_up: the residual stream [tokens, hidden]; down: the activations [tokens, top_k, inter].
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
// binding 2: the weights `w` (lib/quant_words or lib/float_words); binding 7: the format's table.
@group(0) @binding(3) var<storage, read> gamma: array<vec4<f32>>;
// gate_up: the activations [tokens, top_k, inter]; down: the residual stream.
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> ids: array<u32>;
@group(0) @binding(6) var<storage, read> route_w: array<f32>;

fn thread_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return gid.x + gid.y * nwg.x * WG;
}

@compute @workgroup_size(WG)
fn gate_up(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = thread_index(gid, nwg);
  if (i >= p.tokens * p.top_k * p.inter) {
    return;
  }
  let r = i % p.inter;
  let route = i / p.inter;
  let t = route / p.top_k;
  let e = ids[route];
  let per = BLOCK_ELEMS / 32u;
  let row_bytes = (p.hidden / BLOCK_ELEMS) * BLOCK_BYTES;
  let gate_row = (e * 2u * p.inter + r) * row_bytes;
  let up_row = gate_row + p.inter * row_bytes;
  var acc_g = 0.0;
  var acc_u = 0.0;
  var ss = 0.0;
  for (var j = 0u; j < p.hidden / 32u; j++) {
    let s = j % per;
    let e0 = (j / per) * BLOCK_ELEMS;
    var xs: array<vec4<f32>, 8>;
    for (var q = 0u; q < 8u; q++) {
      let at = (t * p.hidden + e0 + group_elem(s, q)) / 4u;
      let xv = x[at];
      ss += dot(xv, xv);
      xs[q] = xv * gamma[(e0 + group_elem(s, q)) / 4u];
    }
    let off = (j / per) * BLOCK_BYTES;
    acc_g += dot8(decode(load_slice(gate_row + off, s), s), xs);
    acc_u += dot8(decode(load_slice(up_row + off, s), s), xs);
  }
  let scale = inverseSqrt(ss / f32(p.hidden) + p.eps);
  let g = acc_g * scale;
  y[i] = g / (1.0 + exp(-g)) * (acc_u * scale);
}

@compute @workgroup_size(WG)
fn down(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = thread_index(gid, nwg);
  if (i >= p.tokens * p.hidden) {
    return;
  }
  let h = i % p.hidden;
  let t = i / p.hidden;
  let per = BLOCK_ELEMS / 32u;
  let row_bytes = (p.inter / BLOCK_ELEMS) * BLOCK_BYTES;
  var total = 0.0;
  for (var k = 0u; k < p.top_k; k++) {
    let route = t * p.top_k + k;
    let row = (ids[route] * p.hidden + h) * row_bytes;
    var acc = 0.0;
    for (var j = 0u; j < p.inter / 32u; j++) {
      let s = j % per;
      let e0 = (j / per) * BLOCK_ELEMS;
      var xs: array<vec4<f32>, 8>;
      for (var q = 0u; q < 8u; q++) {
        xs[q] = x[(route * p.inter + e0 + group_elem(s, q)) / 4u];
      }
      acc += dot8(decode(load_slice(row + (j / per) * BLOCK_BYTES, s), s), xs);
    }
    total += route_w[route] * acc;
  }
  y[i] += total;
}
