import { deepStrictEqual, strictEqual as equal, throws } from "node:assert/strict";
import { hfTensorName, unpermuteQkRows } from "./tensors.ts";

const LLAMA = { arch: "llama" };

Deno.test("unpermuteQkRows undoes llama.cpp's per-head interleave", () => {
  // Two heads of 4: HF rows a0 a1 | a2 a3 (halves) are stored a0 a2 a1 a3.
  const hf = ["a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3"];
  const stored = ["a0", "a2", "a1", "a3", "b0", "b2", "b1", "b3"];
  const order = unpermuteQkRows(8, 4, 2);
  deepStrictEqual([...order], [0, 2, 1, 3, 4, 6, 5, 7]);
  deepStrictEqual([...order].map((r) => stored[r]), hf);
  // One head of 6: stored r0 r3 r1 r4 r2 r5.
  const six = [0, 3, 1, 4, 2, 5];
  deepStrictEqual([...unpermuteQkRows(6, 6, 1)].map((r) => six[r]), [0, 1, 2, 3, 4, 5]);
  throws(() => unpermuteQkRows(10, 4, 2), /q\/k rows/);
  throws(() => unpermuteQkRows(6, 3, 2), /q\/k rows/);
});

Deno.test("GGUF tensor names map to the HF names weights.ts checks", () => {
  equal(hfTensorName(LLAMA, "token_embd.weight"), "model.embed_tokens.weight");
  equal(hfTensorName(LLAMA, "output.weight"), "lm_head.weight");
  equal(hfTensorName(LLAMA, "output_norm.weight"), "model.norm.weight");
  equal(hfTensorName(LLAMA, "blk.12.attn_q.bias"), "model.layers.12.self_attn.q_proj.bias");
  equal(hfTensorName(LLAMA, "blk.0.attn_output.weight"), "model.layers.0.self_attn.o_proj.weight");
  equal(
    hfTensorName(LLAMA, "blk.3.ffn_norm.weight"),
    "model.layers.3.post_attention_layernorm.weight",
  );
  equal(hfTensorName(LLAMA, "blk.3.ffn_down.weight"), "model.layers.3.mlp.down_proj.weight");
  equal(hfTensorName(LLAMA, "blk.01.attn_q.weight"), undefined);
  equal(hfTensorName(LLAMA, "blk.0.toString.weight"), undefined);
  equal(hfTensorName(LLAMA, "rope_freqs.weight"), undefined);
});
