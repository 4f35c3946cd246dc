import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { gguf } from "@huggingface/gguf";
import { decodeWeights } from "../../src/gpu/dtype.ts";
import { openCheckpoint, tensorBytes } from "./read_checkpoint.ts";
import { toGguf } from "./to_gguf.ts";
import { ropeRowPermutation } from "../../src/convert/convert.ts";
import { writeTinyCheckpoint } from "./tiny_checkpoint.ts";

async function convert(arch: "llama" | "qwen2", tied: boolean) {
  const dir = await Deno.makeTempDir();
  await writeTinyCheckpoint(dir, { arch, tied, layers: 2, vocab: 300 });
  await toGguf(dir, `${dir}/model.gguf`);
  const file = await Deno.readFile(`${dir}/model.gguf`);
  const parsed = await gguf(`${dir}/model.gguf`, { allowLocalFile: true });
  const ck = await openCheckpoint(dir);
  const data = (name: string) => {
    const info = parsed.tensorInfos.find((t) => t.name === name);
    ok(info, `tensor ${name} is in the file`);
    const start = Number(parsed.tensorDataOffset + info.offset);
    const elems = info.shape.reduce((a, d) => a * Number(d), 1);
    return file.subarray(
      start,
      start + elems * (Number(info.dtype) === 0 ? 4 : 2),
    );
  };
  return { dir, parsed, ck, data };
}

Deno.test("ropeRowPermutation: within each head, rows [half][i] become [i][half]", () => {
  deepStrictEqual(ropeRowPermutation(2, 4), [0, 2, 1, 3, 4, 6, 5, 7]);
});

Deno.test("a Llama checkpoint as GGUF: llama.cpp's names, dims, types and metadata; q/k rows permuted", async () => {
  const { dir, parsed, ck, data } = await convert("llama", true);
  try {
    const m = parsed.metadata as Record<string, unknown>;
    equal(m["general.architecture"], "llama");
    equal(m["llama.block_count"], 2);
    equal(m["llama.attention.head_count"], 4);
    equal(m["llama.attention.head_count_kv"], 2);
    equal(m["llama.rope.dimension_count"], 4);
    equal(m["llama.rope.freq_base"], 100000);
    equal((m["tokenizer.ggml.tokens"] as string[]).length, 300);
    equal(new Set(m["tokenizer.ggml.tokens"] as string[]).size, 300);
    const names = parsed.tensorInfos.map((t) => t.name);
    ok(!names.includes("output.weight"), "tied: no output tensor");
    equal(names.length, 1 + 2 * 9 + 1);
    const q = parsed.tensorInfos.find((t) => t.name === "blk.0.attn_q.weight")!;
    deepStrictEqual(q.shape, [16n, 16n]);
    equal(Number(q.dtype), 1); // F16
    const norm = parsed.tensorInfos.find((t) => t.name === "blk.0.attn_norm.weight")!;
    equal(Number(norm.dtype), 0); // F32
    // q row 1 of head 0 in llama.cpp's order is HF row 2 (head_dim 4: half 0, i 1 -> [i][half]).
    const hf = await tensorBytes(ck.weights.layers[0]!.q!);
    const row = (b: Uint8Array, r: number) => b.subarray(r * 32, (r + 1) * 32);
    deepStrictEqual(row(data("blk.0.attn_q.weight"), 1), row(hf, 2));
    deepStrictEqual(row(data("blk.0.attn_q.weight"), 2), row(hf, 1));
    const v = await tensorBytes(ck.weights.layers[0]!.v!);
    deepStrictEqual(data("blk.0.attn_v.weight"), v);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a Qwen2 checkpoint as GGUF: biases in F32, nothing permuted, untied output", async () => {
  const { dir, parsed, ck, data } = await convert("qwen2", false);
  try {
    equal(
      (parsed.metadata as Record<string, unknown>)["general.architecture"],
      "qwen2",
    );
    const names = parsed.tensorInfos.map((t) => t.name);
    ok(names.includes("output.weight"));
    for (const b of ["attn_q.bias", "attn_k.bias", "attn_v.bias"]) {
      ok(names.includes(`blk.1.${b}`));
    }
    deepStrictEqual(
      data("blk.0.attn_q.weight"),
      await tensorBytes(ck.weights.layers[0]!.q!),
    );
    const bias = new Float32Array(data("blk.0.attn_k.bias").slice().buffer);
    const want = decodeWeights(
      await tensorBytes(ck.weights.layers[0]!.kBias!),
      "f16",
    );
    deepStrictEqual([...bias], [...want].map(Math.fround));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("llama3 RoPE scaling becomes rope_freqs.weight: 1 for high frequencies, the factor for low", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const config = await writeTinyCheckpoint(dir, { layers: 1 });
    config.rope_scaling = {
      rope_type: "llama3",
      factor: 8,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 64,
    };
    await Deno.writeTextFile(`${dir}/config.json`, JSON.stringify(config));
    await toGguf(dir, `${dir}/model.gguf`);
    const parsed = await gguf(`${dir}/model.gguf`, { allowLocalFile: true });
    const info = parsed.tensorInfos.find((t) => t.name === "rope_freqs.weight");
    ok(info);
    deepStrictEqual(info.shape, [2n]);
    const file = await Deno.readFile(`${dir}/model.gguf`);
    const at = Number(parsed.tensorDataOffset + info.offset);
    // head_dim 4, theta 1e5: wavelengths 2π (< 64/4, unscaled) and 2π·316 (> 64/1, scaled by 8).
    deepStrictEqual([...new Float32Array(file.slice(at, at + 8).buffer)], [
      1,
      8,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
