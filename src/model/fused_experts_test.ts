/**
 * `splitExperts` on fused expert tensors whose widths all differ (3 experts, hidden 64, ffn 96;
 * the family fixture's are all 32): the bf16 layout ([E, hidden, 2·ffn] input-major with gate/up
 * columns interleaved; down [E, ffn, hidden]) and the MXFP4 one (blocks and scales with rows
 * [out, in], gate/up rows interleaved) give each expert's gate, up and down as `[out, in]`
 * matrices with the values an independent reading of each layout gives, and the interleaved
 * biases split per expert. Shapes that disagree with the config are refused naming the tensor.
 */
import { deepStrictEqual, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { encodeWeights } from "../gpu/dtype.ts";
import { seeded } from "../../test/support/kernel_harness.ts";
import { parseConfig } from "./config.ts";
import { splitExperts } from "./fused_experts.ts";
import type { ByteTensorInfo, TensorInfo } from "../formats/safetensors.ts";
import { tensorValues } from "../reference/tensor_values.ts";

const E = 3, H = 64, F = 96;
const CONFIG = parseConfig({
  architectures: ["GptOssForCausalLM"],
  vocab_size: 10,
  hidden_size: H,
  intermediate_size: F,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 16,
  num_local_experts: E,
  num_experts_per_tok: 2,
  attention_bias: true,
});
const P = "model.layers.0.mlp.experts.";

/** A tensor over `bytes` held in memory. */
function tensor<D extends "f32" | "bf16" | "u8">(
  name: string,
  dtype: D,
  shape: number[],
  bytes: Uint8Array,
): { name: string; dtype: D; shape: number[]; offset: number; length: number; source: never } {
  const source = {
    name: "memory",
    size: bytes.length,
    read: (at: number, n: number) => Promise.resolve(bytes.subarray(at, at + n)),
  };
  return { name, dtype, shape, offset: 0, length: bytes.length, source: source as never };
}

/** Element (e, r, c) of each expert's expected `[rows, cols]` matrix, row-major. */
type Matrix = (e: number, r: number, c: number) => number;

async function check(
  split: Map<string, { shape: number[] }>,
  role: string,
  rows: number,
  cols: number,
  want: Matrix,
) {
  for (let e = 0; e < E; e++) {
    const t = split.get(`${P}${e}.${role}_proj.weight`) as TensorInfo;
    deepStrictEqual(t.shape, [rows, cols], `${role} ${e}`);
    const got = await tensorValues(t);
    const expected = Float64Array.from(
      { length: rows * cols },
      (_, i) => want(e, Math.floor(i / cols), i % cols),
    );
    deepStrictEqual(got.map((v) => v + 0), expected.map((v) => v + 0), `${role} ${e}`);
  }
}

Deno.test("fused experts, bf16: gate/up interleaved input-major, down transposed, biases split", async () => {
  // Values exact in bf16: multiples of 1/8 up to 4.
  const gu = Float64Array.from(seeded(1, E * H * 2 * F), (v) => Math.round(v * 32) / 8);
  const dn = Float64Array.from(seeded(2, E * F * H), (v) => Math.round(v * 32) / 8);
  const b = Float32Array.from(seeded(3, E * 2 * F));
  const tensors = new Map<string, TensorInfo>([
    [
      `${P}gate_up_proj`,
      tensor(`${P}gate_up_proj`, "bf16", [E, H, 2 * F], encodeWeights(gu, "bf16")),
    ],
    [`${P}down_proj`, tensor(`${P}down_proj`, "bf16", [E, F, H], encodeWeights(dn, "bf16"))],
    [
      `${P}gate_up_proj_bias`,
      tensor(`${P}gate_up_proj_bias`, "f32", [E, 2 * F], new Uint8Array(b.buffer)),
    ],
  ]);
  const split = splitExperts(CONFIG, tensors, new Map());
  await check(split, "gate", F, H, (e, r, c) => gu[(e * H + c) * 2 * F + 2 * r]!);
  await check(split, "up", F, H, (e, r, c) => gu[(e * H + c) * 2 * F + 2 * r + 1]!);
  await check(split, "down", H, F, (e, r, c) => dn[(e * F + c) * H + r]!);
  for (let e = 0; e < E; e++) {
    const up = await tensorValues(split.get(`${P}${e}.up_proj.bias`) as TensorInfo);
    deepStrictEqual([...up], Array.from({ length: F }, (_, i) => b[e * 2 * F + 2 * i + 1]!));
  }
  equal(split.has(`${P}gate_up_proj`), false);
});

/** E2M1 by its definition: sign bit 3, exponent bits 1-2 (bias 1), mantissa bit 0. */
function e2m1(code: number): number {
  const exp = (code >> 1) & 3, m = code & 1;
  const v = exp === 0 ? m / 2 : (1 + m / 2) * 2 ** (exp - 1);
  return code & 8 ? -v : v;
}

Deno.test("fused experts, MXFP4: rows [out, in], gate/up rows interleaved, HF nibble order", async () => {
  const mx = (rows: number, cols: number, seed: number) => {
    const blocks = Uint8Array.from(
      seeded(seed, E * rows * cols / 2),
      (v) => Math.floor((v + 1) * 128) & 255,
    );
    const scales = Uint8Array.from(
      seeded(seed + 1, E * rows * cols / 32),
      (v) => 120 + Math.floor((v + 1) * 4),
    );
    // Element (e, r, c): byte c/2 of its block, low nibble for even c, times 2^(scale - 127).
    const value: Matrix = (e, r, c) => {
      const block = (e * rows + r) * (cols / 32) + Math.floor(c / 32), j = c % 32;
      const byte = blocks[block * 16 + (j >> 1)]!;
      return e2m1(j & 1 ? byte >> 4 : byte & 15) * 2 ** (scales[block]! - 127);
    };
    return { blocks, scales, value };
  };
  const gu = mx(2 * F, H, 10), dn = mx(H, F, 20);
  const bytes = new Map<string, ByteTensorInfo>();
  const add = (name: string, shape: number[], data: Uint8Array) =>
    bytes.set(`${P}${name}`, tensor(`${P}${name}`, "u8", shape, data));
  add("gate_up_proj_blocks", [E, 2 * F, H / 32, 16], gu.blocks);
  add("gate_up_proj_scales", [E, 2 * F, H / 32], gu.scales);
  add("down_proj_blocks", [E, H, F / 32, 16], dn.blocks);
  add("down_proj_scales", [E, H, F / 32], dn.scales);
  const split = splitExperts(CONFIG, new Map(), bytes);
  equal((split.get(`${P}1.gate_proj.weight`) as TensorInfo).dtype as string, "MXFP4");
  await check(split, "gate", F, H, (e, r, c) => gu.value(e, 2 * r, c));
  await check(split, "up", F, H, (e, r, c) => gu.value(e, 2 * r + 1, c));
  await check(split, "down", H, F, dn.value);
  // The config's widths swapped: refused naming the tensor.
  const swapped = new Map(bytes);
  swapped.set(`${P}down_proj_blocks`, {
    ...bytes.get(`${P}down_proj_blocks`)!,
    shape: [E, F, H / 32, 16],
  });
  throws(
    () => splitExperts(CONFIG, new Map(), swapped),
    (e: unknown) => e instanceof EngineError && e.message.includes(`${P}down_proj_blocks`),
  );
});
