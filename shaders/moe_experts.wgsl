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
//   e·2·inter + r and e·2·inter + inter + r). One output per (token, route j, row r):
//     act[t, j, r] = silu(s·Σₖ x[t,k]·g[k]·G_e[r,k]) · s·Σₖ x[t,k]·g[k]·U_e[r,k]
//   with the MLP's RMSNorm folded in (g its weight, s = 1/sqrt(mean_k x[t,k]² + eps)).
// - `down`: [experts · hidden, inter], expert e's rows at e·hidden. One output per (token,
//   output h), summing over its routes:
//     x[t, h] += Σⱼ weight[t, j] · Σᵣ act[t, j, r]·D_e[h, r]
//   (one workgroup owns each output, so the residual add needs no atomics).
// TPR threads share an output (a power of two up to 64): each takes every TPR-th 32-element slice
// of the row (one slice of the format), and the workgroup sums their partials. TPR = 1 is the
// CPU-adapter path: a thread walks whole rows, with no reduction and no barrier.

override WG: u32 = 64u;
override TPR: u32 = 1u;

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

var<workgroup> red: array<vec4<f32>, 256u>;

// The output this thread works on (possibly past the last: such threads still reach the
// barriers, and store nothing).
fn output_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
  return (wid.x + wid.y * nwg.x) * (WG / TPR) + lid / TPR;
}

// Sum `v` over the TPR threads of an output; the first of them gets the sums.
fn row_sum(v: vec4<f32>, lid: u32) -> vec4<f32> {
  if (TPR == 1u) {
    return v;
  }
  red[lid] = v;
  workgroupBarrier();
  for (var s = TPR / 2u; s > 0u; s >>= 1u) {
    if (lid % TPR < s) {
      red[lid] += red[lid + s];
    }
    workgroupBarrier();
  }
  return red[lid];
}

@compute @workgroup_size(WG)
fn gate_up(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
  let count = p.tokens * p.top_k * p.inter;
  let i = output_index(wid, nwg, lid);
  let r = min(i, count - 1u) % p.inter;
  let route = min(i, count - 1u) / p.inter;
  let t = route / p.top_k;
  let e = ids[route];
  let per = BLOCK_ELEMS / 32u;
  let row_bytes = (p.hidden / BLOCK_ELEMS) * BLOCK_BYTES;
  let gate_row = (e * 2u * p.inter + r) * row_bytes;
  let up_row = gate_row + p.inter * row_bytes;
  var acc = vec4<f32>(0.0); // gate, up, sum of squares of x
  for (var j = lid % TPR; j < p.hidden / 32u; j += TPR) {
    let s = j % per;
    let e0 = (j / per) * BLOCK_ELEMS;
    var xs: array<vec4<f32>, 8>;
    for (var q = 0u; q < 8u; q++) {
      let xv = x[(t * p.hidden + e0 + group_elem(s, q)) / 4u];
      acc.z += dot(xv, xv);
      xs[q] = xv * gamma[(e0 + group_elem(s, q)) / 4u];
    }
    let off = (j / per) * BLOCK_BYTES;
    acc.x += dot8(decode(load_slice(gate_row + off, s), s), xs);
    acc.y += dot8(decode(load_slice(up_row + off, s), s), xs);
  }
  let sums = row_sum(acc, lid);
  if (i < count && lid % TPR == 0u) {
    let scale = inverseSqrt(sums.z / f32(p.hidden) + p.eps);
    let g = sums.x * scale;
    y[i] = g / (1.0 + exp(-g)) * (sums.y * scale);
  }
}

@compute @workgroup_size(WG)
fn down(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let count = p.tokens * p.hidden;
  let i = output_index(wid, nwg, lid);
  let h = min(i, count - 1u) % p.hidden;
  let t = min(i, count - 1u) / p.hidden;
  let per = BLOCK_ELEMS / 32u;
  let row_bytes = (p.inter / BLOCK_ELEMS) * BLOCK_BYTES;
  var total = 0.0;
  for (var k = 0u; k < p.top_k; k++) {
    let route = t * p.top_k + k;
    let row = (ids[route] * p.hidden + h) * row_bytes;
    var acc = 0.0;
    for (var j = lid % TPR; j < p.inter / 32u; j += TPR) {
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
  let sums = row_sum(vec4<f32>(total, 0.0, 0.0, 0.0), lid);
  if (i < count && lid % TPR == 0u) {
    y[i] += sums.x;
  }
}
