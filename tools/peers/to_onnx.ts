/**
 * A safetensors checkpoint whose family runs the plain pre-norm SwiGLU layer (`PRE_NORM_SWIGLU`
 * in `src/model/arch/decoder.ts`: Kiln's first three families) as an ONNX decoder (opset 17,
 * standard ops only) in the layout transformers.js reads. The graph below is that recipe written
 * out by hand, not compiled from the description: a family with another recipe is refused.
 *
 * - inputs `input_ids`, `attention_mask` [batch, past + seq], `position_ids` (int64) and
 *   `past_key_values.{i}.key` / `.value` [batch, kv_heads, past, head_dim];
 * - outputs `logits` [batch, seq, vocab] (float32, so a greedy argmax never meets f16 ties) and
 *   `present.{i}.key` / `.value` [batch, kv_heads, past + seq, head_dim].
 *
 * Weights keep the checkpoint's F16 or F32 (BF16 is widened to F32, exactly); activations and
 * the KV cache take the same type, except that RMSNorm, RoPE and the softmax run in float32
 * (HF's Llama does RMSNorm and the softmax in float32; RoPE in float32 as well follows the
 * known-good fortune export and keeps greedy tokens closer to Kiln's float32). Grouped-query
 * attention reshapes q to [batch, kv_heads, group * seq, head_dim] instead of repeating k/v.
 *
 *   deno run -A tools/peers/to_onnx.ts DIR OUT.onnx [--f32]
 */
import { archOf, PRE_NORM_SWIGLU } from "../../src/model/arch/mod.ts";
import { ropeInvFreq } from "../../src/model/rope.ts";
import type { TensorInfo } from "../../src/formats/safetensors.ts";
import { EngineError } from "../../src/contract/errors.ts";
import { Elem, GraphBuilder } from "./onnx_graph.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";
import {
  type Checkpoint,
  f32Bytes,
  openCheckpoint,
  tensorBytes,
  transpose,
} from "./read_checkpoint.ts";

/** Protobuf messages are limited to 2 GiB; larger models would need ONNX external data. */
const MAX_BYTES = 2 ** 31 - 2 ** 24;

export interface OnnxOptions {
  /** Weights and activations: the checkpoint's (default; BF16 becomes F32), or widened to F32. */
  dtype?: "checkpoint" | "f32";
}

export async function onnxDecoder(
  ck: Checkpoint,
  opts: OnnxOptions = {},
): Promise<Uint8Array> {
  const { config: c, weights: w } = ck;
  const recipe = archOf(c).layer;
  if (JSON.stringify(recipe) !== JSON.stringify(PRE_NORM_SWIGLU)) {
    throw EngineError.invalidArgument(
      `to_onnx: the ${c.arch} layer (${recipe.map((s) => s.op)}) is not the one this export writes`,
    );
  }
  const g = new GraphBuilder();
  const A: Elem = w.embed.dtype === "f16" && opts.dtype !== "f32" ? Elem.F16 : Elem.F32;
  const elemBytes = A === Elem.F16 ? 2 : 4;
  const { numHeads: nh, numKvHeads: nkv, headDim: hd } = c;
  const group = nh / nkv;
  let total = 0;

  const values = async (
    t: TensorInfo,
  ) => (A === Elem.F16 ? await tensorBytes(t) : await f32Bytes(t));
  /** A [out, in] projection as a MatMul right operand [in, out]. */
  const matrix = async (name: string, t: TensorInfo) => {
    const [rows, cols] = t.shape as [number, number];
    total += rows * cols * elemBytes;
    if (total > MAX_BYTES) {
      throw EngineError.invalidArgument(
        "to_onnx: weights over 2 GiB need external data (not written)",
      );
    }
    return g.initializer(
      name,
      A,
      [cols, rows],
      transpose(await values(t), rows, cols, elemBytes),
    );
  };
  const vector = async (name: string, t: TensorInfo) =>
    g.initializer(name, A, t.shape, await values(t));
  const toA = (
    x: string,
  ) => (A === Elem.F32 ? x : g.op1("Cast", [x], { to: A }));
  const toF32 = (
    x: string,
  ) => (A === Elem.F32 ? x : g.op1("Cast", [x], { to: Elem.F32 }));

  const rms = (x: string, weight: string) => {
    const xf = toF32(x);
    const ms = g.op1("ReduceMean", [g.op1("Mul", [xf, xf])], {
      axes: [-1],
      keepdims: 1,
    });
    const inv = g.op1("Reciprocal", [
      g.op1("Sqrt", [g.op1("Add", [ms, g.scalar(c.rmsNormEps)])]),
    ]);
    return g.op1("Mul", [toA(g.op1("Mul", [xf, inv])), weight]);
  };

  // Inputs.
  const ids = g.input("input_ids", Elem.I64, ["batch_size", "sequence_length"]);
  const mask = g.input("attention_mask", Elem.I64, [
    "batch_size",
    "total_sequence_length",
  ]);
  const pos = g.input("position_ids", Elem.I64, [
    "batch_size",
    "sequence_length",
  ]);
  const past: [string, string][] = [];
  for (let i = 0; i < c.numLayers; i++) {
    const shape = ["batch_size", nkv, "past_sequence_length", hd];
    past.push([
      g.input(`past_key_values.${i}.key`, A, shape),
      g.input(`past_key_values.${i}.value`, A, shape),
    ]);
  }

  // Attention bias [batch, 1, group * seq, total]: 0 where key t <= query position and unmasked.
  const scalarI64 = (v: number) => g.constant(Elem.I64, [], [v]);
  const seqLen = g.op1("Gather", [g.op1("Shape", [ids]), scalarI64(1)], {
    axis: 0,
  });
  const totalLen = g.op1("Gather", [g.op1("Shape", [mask]), scalarI64(1)], {
    axis: 0,
  });
  const pastLen = g.op1("Sub", [totalLen, seqLen]);
  const keys = g.op1("Unsqueeze", [
    g.op1("Range", [scalarI64(0), totalLen, scalarI64(1)]),
    g.ints([0]),
  ]);
  const queries = g.op1("Unsqueeze", [
    g.op1("Range", [pastLen, totalLen, scalarI64(1)]),
    g.ints([1]),
  ]);
  const causal = g.op1("LessOrEqual", [keys, queries]);
  const unpadded = g.op1("Cast", [g.op1("Unsqueeze", [mask, g.ints([1])])], {
    to: Elem.BOOL,
  });
  const allowed = g.op1("And", [causal, unpadded]);
  let bias = g.op1("Where", [allowed, g.scalar(0), g.scalar(-1e9)]);
  bias = g.op1("Unsqueeze", [bias, g.ints([1])]);
  if (group > 1) bias = g.op1("Tile", [bias, g.ints([1, 1, group, 1])]);

  // RoPE tables [batch, 1, seq, head_dim].
  const invFreq = g.constant(
    Elem.F32,
    [hd / 2],
    [...ropeInvFreq(hd, c.ropeTheta, c.ropeScaling)],
  );
  const posF = g.op1("Unsqueeze", [
    g.op1("Cast", [pos], { to: Elem.F32 }),
    g.ints([2]),
  ]);
  const freqs = g.op1("Mul", [posF, invFreq]);
  const angles = g.op1("Unsqueeze", [
    g.op1("Concat", [freqs, freqs], { axis: -1 }),
    g.ints([1]),
  ]);
  const cos = g.op1("Cos", [angles]);
  const sin = g.op1("Sin", [angles]);
  const halves = g.ints([hd / 2, hd / 2]);
  const rope = (x: string) => {
    const xf = toF32(x);
    const [x1, x2] = g.op("Split", [xf, halves], { axis: -1 }, 2) as [
      string,
      string,
    ];
    const rotated = g.op1("Concat", [g.op1("Neg", [x2]), x1], { axis: -1 });
    return toA(
      g.op1("Add", [g.op1("Mul", [xf, cos]), g.op1("Mul", [rotated, sin])]),
    );
  };
  const heads = (x: string, n: number) =>
    g.op1("Transpose", [g.op1("Reshape", [x, g.ints([0, 0, n, hd])])], {
      perm: [0, 2, 1, 3],
    });

  let x = g.op1("Gather", [await vector("embed_tokens", w.embed), ids], {
    axis: 0,
  });
  total += w.embed.length;
  for (const [i, l] of w.layers.entries()) {
    const p = `layers.${i}.`;
    const h = rms(x, await vector(`${p}input_layernorm`, l.inputNorm!));
    const proj = async (name: string, t: TensorInfo, b?: TensorInfo) => {
      const y = g.op1("MatMul", [h, await matrix(`${p}${name}`, t)]);
      return b ? g.op1("Add", [y, await vector(`${p}${name}.bias`, b)]) : y;
    };
    const q = rope(heads(await proj("q_proj", l.q!, l.qBias), nh));
    const k = rope(heads(await proj("k_proj", l.k!, l.kBias), nkv));
    const v = heads(await proj("v_proj", l.v!, l.vBias), nkv);
    const [pastK, pastV] = past[i]!;
    const presentK = g.op1("Concat", [pastK, k], { axis: 2 });
    const presentV = g.op1("Concat", [pastV, v], { axis: 2 });
    const kvShape = ["batch_size", nkv, "total_sequence_length", hd];
    g.output(presentK, `present.${i}.key`, A, kvShape);
    g.output(presentV, `present.${i}.value`, A, kvShape);

    const qg = g.op1("Reshape", [q, g.ints([0, nkv, -1, hd])]);
    const kT = g.op1("Transpose", [presentK], { perm: [0, 1, 3, 2] });
    let scores = g.op1("Mul", [
      toF32(g.op1("MatMul", [qg, kT])),
      g.scalar(1 / Math.sqrt(hd)),
    ]);
    scores = g.op1("Add", [scores, bias]);
    const probs = toA(g.op1("Softmax", [scores], { axis: -1 }));
    let o = g.op1("Reshape", [
      g.op1("MatMul", [probs, presentV]),
      g.ints([0, nh, -1, hd]),
    ]);
    o = g.op1("Reshape", [
      g.op1("Transpose", [o], { perm: [0, 2, 1, 3] }),
      g.ints([0, 0, nh * hd]),
    ]);
    x = g.op1("Add", [
      x,
      g.op1("MatMul", [o, await matrix(`${p}o_proj`, l.o!)]),
    ]);

    const h2 = rms(x, await vector(`${p}post_attention_layernorm`, l.postNorm!));
    const gate = g.op1("MatMul", [h2, await matrix(`${p}gate_proj`, l.gate!)]);
    const up = g.op1("MatMul", [h2, await matrix(`${p}up_proj`, l.up!)]);
    const act = g.op1("Mul", [
      g.op1("Mul", [gate, g.op1("Sigmoid", [gate])]),
      up,
    ]);
    x = g.op1("Add", [
      x,
      g.op1("MatMul", [act, await matrix(`${p}down_proj`, l.down!)]),
    ]);
  }
  const last = rms(x, await vector("norm", w.norm));
  const logits = toF32(
    g.op1("MatMul", [last, await matrix("lm_head", w.lmHead)]),
  );
  g.output(logits, "logits", Elem.F32, [
    "batch_size",
    "sequence_length",
    c.vocabSize,
  ]);
  return g.encode(ck.dir.split("/").filter(Boolean).pop() ?? "decoder");
}

/** Convert the checkpoint in `dir` to an ONNX decoder at `out`. */
export async function toOnnx(
  dir: string,
  out: string,
  opts: OnnxOptions = {},
): Promise<void> {
  await Deno.writeFile(out, await onnxDecoder(await openCheckpoint(dir), opts));
}

if (import.meta.main) {
  const { flags, args } = runCli({
    name: "to_onnx",
    command: "deno run -A tools/peers/to_onnx.ts",
    about: "A checkpoint folder as an ONNX decoder graph (opset 17) onnxruntime-web runs.",
    flags: {
      f32: {
        type: "boolean",
        help: "F32 weights and arithmetic (default: the checkpoint's)",
      },
    },
    args: {
      usage: "DIR OUT.onnx",
      min: 2,
      max: 2,
      help: "the checkpoint, the file to write",
    },
  });
  const [dir, out] = args as [string, string];
  await toOnnx(dir, out, flags.f32 ? { dtype: "f32" } : {});
  console.error(`wrote ${out}`);
}
