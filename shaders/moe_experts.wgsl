// The experts of a mixture-of-experts MLP, run for each token's routed experts only (the ids and
// weights `moe_route.wgsl` wrote, [tokens, top_k]). Composed per weight format like the product
// kernels (`moe_experts:format=<fragment>` imports shaders/formats/<fragment>.wgsl): the expert
// weights stay in their GGUF blocks (or float rows), dequantized in registers.
//! import formats/{format}
//! import lib/dot
//
// The experts' matrices are slabs of rows, so expert e's rows sit at a byte offset computed
// from e:
// - `gate_up`: [experts · 2·inter, hidden], expert e's gate rows then its up rows (rows
//   e·2·inter + r and e·2·inter + inter + r). One output per (token, route j, row r):
//     act[t, j, r] = act(s·Σₖ x[t,k]·g[k]·G_e[r,k] (+ gate bias), s·Σₖ x[t,k]·g[k]·U_e[r,k] (+ up bias))
//   with the MLP's RMSNorm folded in (g its weight, s = 1/sqrt(mean_k x[t,k]² + eps)) and the
//   activation `expert_act` (ACT: SwiGLU or the clamped SwiGLU).
// - `down`: [experts · hidden, inter], expert e's rows at e·hidden. One output per (token,
//   output h), summing over its routes:
//     x[t, h] += Σⱼ weight[t, j] · (Σᵣ act[t, j, r]·D_e[h, r] (+ down bias))
//   (one workgroup owns each output, so the residual add needs no atomics).
// The weights bound are those of experts [first, first + count) (a slab too big for one binding
// is split into buffers of whole experts, and each pass runs once per buffer): a route to any
// other expert is skipped, so gate_up writes nothing for it and down adds only this buffer's
// routes to x (the runs over all buffers sum to the whole). Rows are found from e - first.
// With BIASES, binding 8 holds the experts' biases: for `gate_up` [experts · 2·inter] (expert
// e's gate biases, then its up biases), for `down` [experts · hidden], every expert's (indexed by
// the global e).
// TPR threads share an output (a power of two up to 64): each takes every TPR-th 32-element slice
// of the row (one slice of the format), and the workgroup sums their partials. TPR = 1 is the
// CPU-adapter path: a thread walks RPT whole rows, with no reduction and no barrier.

override WG: u32 = 64u;
override TPR: u32 = 1u;
// Outputs per thread (1..8) when TPR is 1: one load of the activations serves RPT weight rows.
override RPT: u32 = 1u;
// The experts' activation: 0 SwiGLU, 1 the clamped SwiGLU (`expert_act`).
override ACT: u32 = 0u;
// Per-expert biases on the gate, up and down products (binding 8).
override BIASES: bool = false;

const MAX_RPT: u32 = 8u;
// The clamped SwiGLU's sigmoid slope.
const ALPHA: f32 = 1.702;

struct Params {
  tokens: u32,
  hidden: u32,
  inter: u32,
  top_k: u32,
  eps: f32,
  limit: f32, // the clamped SwiGLU's limit
  first: u32, // the first expert in the weights bound
  count: u32, // experts in the weights bound
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
@group(0) @binding(8) var<storage, read> bias: array<f32>;

var<workgroup> red: array<vec4<f32>, 256u>;

// The activation of gate g and up u: SwiGLU silu(g)·u, or with ACT 1 the clamped SwiGLU
// (gpt-oss's swiglu_oai): g' = min(g, limit), u' = clamp(u, -limit, limit),
// (u' + 1)·g'·sigmoid(ALPHA·g').
fn expert_act(g: f32, u: f32) -> f32 {
  if (ACT == 1u) {
    let gc = min(g, p.limit);
    return gc / (1.0 + exp(-ALPHA * gc)) * (clamp(u, -p.limit, p.limit) + 1.0);
  }
  return g / (1.0 + exp(-g)) * u;
}

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
  // Outputs are blocks of RPT rows of one route (the last block's rows past inter are clamped
  // and not stored).
  let blocks = (p.inter + RPT - 1u) / RPT;
  let count = p.tokens * p.top_k * blocks;
  let i = output_index(wid, nwg, lid);
  let route = min(i, count - 1u) / blocks;
  let r0 = (min(i, count - 1u) % blocks) * RPT;
  let t = route / p.top_k;
  let e = ids[route];
  // Whether e's weights are bound (e < first wraps past count); a route to another expert
  // walks no weights, reaches the barriers and stores nothing.
  let mine = e - p.first < p.count;
  let local = select(0u, e - p.first, mine);
  let per = BLOCK_ELEMS / 32u;
  let row_bytes = (p.hidden / BLOCK_ELEMS) * BLOCK_BYTES;
  var gate_row: array<u32, MAX_RPT>;
  for (var k = 0u; k < RPT; k++) {
    gate_row[k] = (local * 2u * p.inter + min(r0 + k, p.inter - 1u)) * row_bytes;
  }
  let up = p.inter * row_bytes;
  var acc: array<vec2<f32>, MAX_RPT>; // gate, up
  var ss = 0.0; // the sum of squares of x
  for (var j = lid % TPR; j < select(0u, p.hidden / 32u, mine); j += TPR) {
    let s = j % per;
    let e0 = (j / per) * BLOCK_ELEMS;
    var xs: array<vec4<f32>, 8>;
    for (var q = 0u; q < 8u; q++) {
      let xv = x[(t * p.hidden + e0 + group_elem(s, q)) / 4u];
      ss += dot(xv, xv);
      xs[q] = xv * gamma[(e0 + group_elem(s, q)) / 4u];
    }
    let off = (j / per) * BLOCK_BYTES;
    for (var k = 0u; k < RPT; k++) {
      acc[k].x += dot8(decode(load_slice(gate_row[k] + off, s), s), xs);
      acc[k].y += dot8(decode(load_slice(gate_row[k] + up + off, s), s), xs);
    }
  }
  // Several threads per output: RPT is 1.
  let sums = row_sum(vec4<f32>(acc[0], ss, 0.0), lid);
  if (i >= count || lid % TPR != 0u || !mine) {
    return;
  }
  acc[0] = sums.xy;
  let scale = inverseSqrt(sums.z / f32(p.hidden) + p.eps);
  for (var k = 0u; k < RPT && r0 + k < p.inter; k++) {
    var gu = acc[k] * scale;
    if (BIASES) {
      let b = e * 2u * p.inter + r0 + k;
      gu += vec2<f32>(bias[b], bias[b + p.inter]);
    }
    y[route * p.inter + r0 + k] = expert_act(gu.x, gu.y);
  }
}

@compute @workgroup_size(WG)
fn down(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  // Outputs are blocks of RPT columns of x of one token.
  let blocks = (p.hidden + RPT - 1u) / RPT;
  let count = p.tokens * blocks;
  let i = output_index(wid, nwg, lid);
  let t = min(i, count - 1u) / blocks;
  let h0 = (min(i, count - 1u) % blocks) * RPT;
  let per = BLOCK_ELEMS / 32u;
  let row_bytes = (p.inter / BLOCK_ELEMS) * BLOCK_BYTES;
  var total: array<f32, MAX_RPT>;
  var acc: array<f32, MAX_RPT>;
  for (var k = 0u; k < p.top_k; k++) {
    let route = t * p.top_k + k;
    let e = ids[route];
    if (e - p.first >= p.count) {
      continue; // another buffer's expert (e < first wraps past count)
    }
    let base = (e - p.first) * p.hidden;
    // Reset per route by hand: a variable declared in the loop body need not start from zero
    // on every iteration in every WGSL compiler.
    for (var c = 0u; c < RPT; c++) {
      acc[c] = 0.0;
    }
    for (var j = lid % TPR; j < p.inter / 32u; j += TPR) {
      let s = j % per;
      let e0 = (j / per) * BLOCK_ELEMS;
      var xs: array<vec4<f32>, 8>;
      for (var q = 0u; q < 8u; q++) {
        xs[q] = x[(route * p.inter + e0 + group_elem(s, q)) / 4u];
      }
      let off = (j / per) * BLOCK_BYTES;
      for (var c = 0u; c < RPT; c++) {
        let row = (base + min(h0 + c, p.hidden - 1u)) * row_bytes;
        acc[c] += dot8(decode(load_slice(row + off, s), s), xs);
      }
    }
    // The bias once per output: in its first thread (the others' partials are summed to it).
    if (BIASES && lid % TPR == 0u) {
      for (var c = 0u; c < RPT; c++) {
        acc[c] += bias[e * p.hidden + min(h0 + c, p.hidden - 1u)];
      }
    }
    for (var c = 0u; c < RPT; c++) {
      total[c] += route_w[route] * acc[c];
    }
  }
  let sums = row_sum(vec4<f32>(total[0], 0.0, 0.0, 0.0), lid);
  if (i >= count || lid % TPR != 0u) {
    return;
  }
  total[0] = sums.x;
  for (var c = 0u; c < RPT && h0 + c < p.hidden; c++) {
    y[t * p.hidden + h0 + c] += total[c];
  }
}
