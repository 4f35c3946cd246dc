// Linear layers: y[m, n] = sum_k x[m, k] * W[n, k] (+ b[n]), W in HF layout [N, K] stored as
// F32, F16 or BF16 (packed two per u32 and widened to f32), f32 accumulation.
//   matvec: skinny products (decode, M <= 8 per workgroup row-chunk): one workgroup per output
//           column n, its threads split K, then a workgroup reduction.
//   tiled:  16x16 output tiles with K staged through workgroup memory (prefill).

override WEIGHT_DTYPE: u32 = 0u; // 0 f32, 1 f16, 2 bf16
override HAS_BIAS: bool = false;

const MV_WG: u32 = 64u;
const MV_ROWS: u32 = 8u;
const TILE: u32 = 16u;

struct Params {
  m: u32,
  n: u32,
  k: u32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

fn unpack_half(word: u32, hi: u32) -> f32 {
  let half = (word >> (hi * 16u)) & 0xffffu;
  if (WEIGHT_DTYPE == 1u) {
    return unpack2x16float(half).x;
  }
  return bitcast<f32>(half << 16u);
}

fn weight(i: u32) -> f32 {
  if (WEIGHT_DTYPE == 0u) {
    return bitcast<f32>(w[i]);
  }
  return unpack_half(w[i >> 1u], i & 1u);
}

fn bias_at(n: u32) -> f32 {
  if (!HAS_BIAS) {
    return 0.0;
  }
  if (WEIGHT_DTYPE == 0u) {
    return bitcast<f32>(bias[n]);
  }
  return unpack_half(bias[n >> 1u], n & 1u);
}

var<workgroup> red: array<array<f32, MV_ROWS>, MV_WG>;

@compute @workgroup_size(MV_WG)
fn matvec(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
  let n = wid.x + wid.y * nwg.x;
  let m0 = wid.z * MV_ROWS;
  let rows = min(MV_ROWS, p.m - m0);
  var acc: array<f32, MV_ROWS>;
  if (n < p.n) {
    let row = n * p.k;
    if (WEIGHT_DTYPE != 0u && (p.k & 1u) == 0u) {
      // Even K: each u32 word holds two weights of this row.
      let words = p.k / 2u;
      let wbase = row / 2u;
      for (var j = lid; j < words; j += MV_WG) {
        let word = w[wbase + j];
        let w0 = unpack_half(word, 0u);
        let w1 = unpack_half(word, 1u);
        for (var r = 0u; r < rows; r++) {
          let xi = (m0 + r) * p.k + 2u * j;
          acc[r] += x[xi] * w0 + x[xi + 1u] * w1;
        }
      }
    } else {
      for (var kk = lid; kk < p.k; kk += MV_WG) {
        let wv = weight(row + kk);
        for (var r = 0u; r < rows; r++) {
          acc[r] += x[(m0 + r) * p.k + kk] * wv;
        }
      }
    }
  }
  for (var r = 0u; r < MV_ROWS; r++) {
    red[lid][r] = acc[r];
  }
  workgroupBarrier();
  for (var s = MV_WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      for (var r = 0u; r < MV_ROWS; r++) {
        red[lid][r] += red[lid + s][r];
      }
    }
    workgroupBarrier();
  }
  if (n < p.n && lid < rows) {
    y[(m0 + lid) * p.n + n] = red[0][lid] + bias_at(n);
  }
}

var<workgroup> xs: array<array<f32, TILE>, TILE>;
var<workgroup> ws: array<array<f32, TILE>, TILE>;

@compute @workgroup_size(TILE, TILE)
fn tiled(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let n = wid.x * TILE + lid.x;
  let m = wid.y * TILE + lid.y;
  var acc = 0.0;
  let wn = wid.x * TILE + lid.y; // the weight row this thread stages
  for (var k0 = 0u; k0 < p.k; k0 += TILE) {
    let kx = k0 + lid.x;
    xs[lid.y][lid.x] = select(0.0, x[m * p.k + kx], m < p.m && kx < p.k);
    ws[lid.y][lid.x] = select(0.0, weight(wn * p.k + kx), wn < p.n && kx < p.k);
    workgroupBarrier();
    for (var t = 0u; t < TILE; t++) {
      acc += xs[lid.y][t] * ws[lid.x][t];
    }
    workgroupBarrier();
  }
  if (m < p.m && n < p.n) {
    y[m * p.n + n] = acc + bias_at(n);
  }
}
