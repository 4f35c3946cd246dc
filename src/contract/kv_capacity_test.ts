import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { kvGeometry, kvMisfit, sequenceLimit } from "./kv_capacity.ts";

const kv = { numBlocks: 8, blockSize: 16 };
const req = (prompt: number, stop: { max_tokens?: number; min_tokens?: number } = {}) => ({
  token_ids: Array.from({ length: prompt }, () => 1),
  stop_conditions: stop,
});

Deno.test("kv capacity: a prompt fits while it and one more token fit the whole cache", () => {
  equal(kvMisfit(req(127), kv), undefined);
  const m = kvMisfit(req(128), kv);
  equal(m?.field, "token_ids");
  equal(
    m?.message,
    "a 128-token prompt and one generated token need 9 KV blocks; the KV cache holds 128 tokens (8 blocks of 16)",
  );
  // min_tokens must fit too, unless max_tokens ends the request before it.
  equal(kvMisfit(req(100, { min_tokens: 28 }), kv), undefined);
  equal(kvMisfit(req(100, { min_tokens: 29 }), kv)?.field, "min_tokens");
  equal(kvMisfit(req(100, { min_tokens: 40, max_tokens: 10 }), kv), undefined);
  ok(/100-token prompt plus min_tokens 29 is 129 tokens, 9 KV blocks/.test(
    kvMisfit(req(100, { min_tokens: 29 }), kv)!.message,
  ));
});

Deno.test("kv capacity: the geometry a config reports, and the longest sequence", () => {
  deepStrictEqual(kvGeometry({ model: "m", total_kv_blocks: 8, kv_cache_block_size: 16 }), kv);
  equal(kvGeometry({ model: "m", total_kv_blocks: 8 }), undefined);
  equal(kvGeometry({ model: "m", total_kv_blocks: 0, kv_cache_block_size: 16 }), undefined);
  equal(sequenceLimit(1024, kv), 128);
  equal(sequenceLimit(100, kv), 100);
  equal(sequenceLimit(1024), 1024);
});
