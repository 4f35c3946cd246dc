import {
  deepStrictEqual as deepEqual,
  ok,
  rejects,
  strictEqual as equal,
} from "node:assert/strict";
import { EngineError } from "../../src/contract/errors.ts";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { decodeWeights } from "../../src/gpu/dtype.ts";
import { parseConfig } from "../../src/model/config.ts";
import { Forward } from "../../src/runtime/forward.ts";
import { GpuModel } from "../../src/runtime/gpu_model.ts";
import { readCheckpoint, type TensorInfo } from "../../src/formats/safetensors.ts";
import { mapWeights } from "../../src/model/weights.ts";
import { testGpu } from "../../test/support/gpu.ts";
import { ensureCheckpoint, hashFile, listShapes, readManifest, sliceConfig } from "./checkpoint.ts";
import { elements, tensorFiller, type TensorSpec, tensorSpecs } from "./random_weights.ts";

/** A Qwen2-style shape small enough to generate and run in a test (odd sizes on purpose). */
const TINY = {
  architectures: ["Qwen2ForCausalLM"],
  vocab_size: 301,
  hidden_size: 48,
  intermediate_size: 88,
  num_hidden_layers: 2,
  num_attention_heads: 6,
  num_key_value_heads: 2,
  max_position_embeddings: 128,
  rms_norm_eps: 1e-6,
  rope_theta: 10000,
  tie_word_embeddings: false,
  torch_dtype: "float16",
};

async function shapesDir(known?: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "kiln-shapes-" });
  await Deno.writeTextFile(`${dir}/tiny.json`, JSON.stringify(TINY));
  if (known) await Deno.writeTextFile(`${dir}/sha256.json`, JSON.stringify({ tiny: known }));
  return dir;
}

const quiet = { log: () => {} };

Deno.test("every bench shape parses, and its generated tensor list is what the weight map expects", async () => {
  const shapes = await listShapes();
  deepEqual(shapes, [
    "gemma-3-1b",
    "granite-4.0-h-1b",
    "lfm2-1.2b",
    "llama-3.2-1b",
    "phi-4-mini",
    "qwen2.5-0.5b",
    "qwen3-0.6b",
    "qwen3-30b-a3b",
    "qwen3.5-0.8b",
    "smollm2-135m",
    "smollm3-3b",
  ]);
  for (const s of shapes) {
    const config = parseConfig(
      await Deno.readTextFile(new URL(`./shapes/${s}.json`, import.meta.url)),
    );
    equal(config.dtype, "f16", s);
    const tensors = new Map<string, TensorInfo>();
    let params = 0;
    for (const t of tensorSpecs(config)) {
      const length = elements(t) * 2;
      params += elements(t);
      // A stand-in source: only names and shapes are checked.
      const source = { name: t.name } as TensorInfo["source"];
      tensors.set(t.name, { ...t, dtype: "f16", offset: 0, length, source });
    }
    mapWeights(config, tensors, true); // throws naming a missing or misshapen tensor
    const expected: Record<string, number> = {
      "smollm2-135m": 134_515_008,
      "qwen2.5-0.5b": 494_032_768,
      "llama-3.2-1b": 1_235_814_400,
      "qwen3-0.6b": 596_049_920,
      "gemma-3-1b": 999_885_952,
      // 10 short-conv and 6 attention layers, MLP 8192 (block_ff_dim 12288 auto-adjusted), tied.
      "lfm2-1.2b": 1_170_340_608,
      // 18 Gated DeltaNet layers of 21,555,360 and 6 gated-attention layers of 18,352,640
      // (8 query heads of 256, their gate doubling q_proj), 248,320 × 1024 tied embedding.
      "qwen3.5-0.8b": 752_393_024,
      // 36 Mamba-2 layers of 33,520,016 (48 heads of 64, state 128, one group) and 4 attention
      // layers of 25,168,896, MLP 4096, 100,352 × 1536 tied embedding.
      "granite-4.0-h-1b": 1_461_538_368,
      "smollm3-3b": 3_075_098_624,
      "phi-4-mini": 3_836_021_760,
      // 48 layers of 623,120,640 (128 experts of 3 × 768 × 2048 each), untied head.
      "qwen3-30b-a3b": 30_532_122_624,
    };
    equal(params, expected[s], s);
  }
});

Deno.test("a checkpoint is generated once, deterministically, loads, and is reused", async () => {
  const shapes = await shapesDir();
  const a = await Deno.makeTempDir({ prefix: "kiln-ckpt-" });
  const b = await Deno.makeTempDir({ prefix: "kiln-ckpt-" });
  try {
    const dirA = await ensureCheckpoint("tiny", { shapesDir: shapes, cacheDir: a, ...quiet });
    const dirB = await ensureCheckpoint("tiny", { shapesDir: shapes, cacheDir: b, ...quiet });
    const ma = (await readManifest(dirA))!;
    equal(ma.sha256, (await readManifest(dirB))!.sha256, "same bytes in two places");
    equal(ma.sha256, await hashFile(`${dirA}/model.safetensors`));
    equal(ma.bytes, (await Deno.stat(`${dirA}/model.safetensors`)).size);
    deepEqual(JSON.parse(await Deno.readTextFile(`${dirA}/config.json`)), TINY);
    // A second call reuses the file (same inode and mtime), re-hashing it when asked.
    const before = await Deno.stat(`${dirA}/model.safetensors`);
    await ensureCheckpoint("tiny", { shapesDir: shapes, cacheDir: a, verify: true, ...quiet });
    deepEqual((await Deno.stat(`${dirA}/model.safetensors`)).mtime, before.mtime);
    // A different seed gives different bytes.
    const c = await ensureCheckpoint("tiny", {
      shapesDir: shapes,
      cacheDir: a,
      seed: "other",
      ...quiet,
    });
    ok((await readManifest(c))!.sha256 !== ma.sha256);

    const tensors = await readCheckpoint((n) => dirFiles(dirB).open(n));
    const config = parseConfig(TINY);
    const w = mapWeights(config, tensors);
    const norm = decodeWeights(await w.norm.source.read(w.norm.offset, w.norm.length), "f16");
    ok(norm.every((x) => x === 1), "norms are 1");
    const q = w.layers[0]!.q!;
    const vals = decodeWeights(await q.source.read(q.offset, q.length), "f16");
    const mean = vals.reduce((s, x) => s + x, 0) / vals.length;
    const std = Math.sqrt(vals.reduce((s, x) => s + (x - mean) ** 2, 0) / vals.length);
    ok(Math.abs(mean) < 0.002 && Math.abs(std - 0.02) < 0.002, `mean ${mean}, std ${std}`);

    // It runs: one forward step gives finite logits.
    const model = await GpuModel.load(await testGpu(), dirFiles(dirB), { kvBlocks: 2 });
    const fwd = new Forward(model);
    try {
      const logits = await fwd.run({
        tokens: [1, 300, 7],
        positions: [0, 1, 2],
        slots: [0, 1, 2],
        tableOffsets: [0, 0, 0],
        blockTable: [0],
        logitRows: [2],
      });
      equal(logits.length, TINY.vocab_size);
      ok(logits.every(Number.isFinite));
    } finally {
      fwd.destroy();
      model.destroy();
    }
  } finally {
    for (const d of [shapes, a, b]) await Deno.remove(d, { recursive: true });
  }
});

Deno.test("a slice of a shape holds the whole shape's first layers byte for byte", async () => {
  const shapes = await shapesDir();
  const cache = await Deno.makeTempDir({ prefix: "kiln-ckpt-" });
  try {
    const opts = { shapesDir: shapes, cacheDir: cache, ...quiet };
    const whole = await ensureCheckpoint("tiny", opts);
    const slice = await ensureCheckpoint("tiny", { ...opts, layers: 1 });
    equal(slice, `${cache}/tiny-first1`);
    const config = JSON.parse(await Deno.readTextFile(`${slice}/config.json`));
    deepEqual(config, { ...TINY, num_hidden_layers: 1 });
    deepEqual((await readManifest(slice))!.layers, { kept: 1, of: 2 });
    const a = await readCheckpoint((n) => dirFiles(whole).open(n));
    const b = await readCheckpoint((n) => dirFiles(slice).open(n));
    deepEqual(
      [...b.keys()],
      [...a.keys()].filter((n) => !n.startsWith("model.layers.1.")),
      "every tensor but layer 1's",
    );
    for (const [name, t] of b) {
      const u = a.get(name)!;
      deepEqual(t.shape, u.shape, name);
      deepEqual(
        await t.source.read(t.offset, t.length),
        await u.source.read(u.offset, u.length),
        name,
      );
    }
    for (const layers of [0, 3, 1.5]) {
      await rejects(
        ensureCheckpoint("tiny", { ...opts, layers }),
        (e: unknown) => e instanceof EngineError && e.type === "InvalidArgument",
        `layers ${layers}`,
      );
    }
  } finally {
    for (const d of [shapes, cache]) await Deno.remove(d, { recursive: true });
  }
});

Deno.test("a hybrid shape lists each layer's own kind of tensors, in HF's shapes, and slices its layer list", async () => {
  const raw = JSON.parse(
    await Deno.readTextFile(new URL("./shapes/lfm2-1.2b.json", import.meta.url)),
  ) as Record<string, unknown>;
  const cut = sliceConfig(raw, 3);
  deepEqual(cut.layer_types, ["conv", "conv", "full_attention"]);
  equal(cut.num_hidden_layers, 3);
  deepEqual(
    sliceConfig({ num_hidden_layers: 16, full_attn_idxs: [2, 5, 8] }, 6).full_attn_idxs,
    [2, 5],
  );
  const specs = new Map(tensorSpecs(parseConfig(cut)).map((t) => [t.name, t.shape]));
  const layer = (l: number) =>
    [...specs.keys()].filter((n) => n.startsWith(`model.layers.${l}.`))
      .map((n) => n.slice(`model.layers.${l}.`.length)).sort();
  const mlp = [
    "feed_forward.w1.weight",
    "feed_forward.w2.weight",
    "feed_forward.w3.weight",
    "ffn_norm.weight",
    "operator_norm.weight",
  ];
  deepEqual(
    layer(1),
    [
      "conv.conv.weight",
      "conv.in_proj.weight",
      "conv.out_proj.weight",
      ...mlp,
    ].sort(),
  );
  deepEqual(
    layer(2),
    [
      ...mlp,
      "self_attn.k_layernorm.weight",
      "self_attn.k_proj.weight",
      "self_attn.out_proj.weight",
      "self_attn.q_layernorm.weight",
      "self_attn.q_proj.weight",
      "self_attn.v_proj.weight",
    ].sort(),
  );
  deepEqual(specs.get("model.layers.0.conv.conv.weight"), [2048, 1, 3]);
  deepEqual(specs.get("model.layers.0.conv.in_proj.weight"), [6144, 2048]);
  deepEqual(specs.get("model.layers.2.self_attn.k_proj.weight"), [512, 2048]);
  equal(specs.has("lm_head.weight"), false, "tied head");
});

Deno.test("the values do not depend on how a tensor is chunked", () => {
  const spec: TensorSpec = { name: "t", shape: [1000], fill: { kind: "normal", std: 0.02 } };
  const whole = new Uint16Array(1000);
  tensorFiller("s", spec)(whole);
  const parts = new Uint16Array(1000);
  const next = tensorFiller("s", spec);
  for (const [from, to] of [[0, 2], [2, 500], [500, 998], [998, 1000]] as const) {
    next(parts.subarray(from, to));
  }
  deepEqual(parts, whole);
});

Deno.test("a hash that differs from the known one, or an unknown shape, is refused", async () => {
  const shapes = await shapesDir("0".repeat(64));
  const cache = await Deno.makeTempDir({ prefix: "kiln-ckpt-" });
  try {
    await rejects(
      ensureCheckpoint("tiny", { shapesDir: shapes, cacheDir: cache, ...quiet }),
      /differs from the known/,
    );
    equal(await readManifest(`${cache}/tiny`), undefined, "no manifest for a bad checkpoint");
    await rejects(
      ensureCheckpoint("nope", { shapesDir: shapes, cacheDir: cache, ...quiet }),
      (e: unknown) =>
        e instanceof EngineError && e.type === "InvalidArgument" && /known: tiny/.test(e.message),
    );
    await rejects(
      ensureCheckpoint("../x", { shapesDir: shapes, cacheDir: cache, ...quiet }),
      (e: unknown) => e instanceof EngineError && e.type === "InvalidArgument",
    );
  } finally {
    for (const d of [shapes, cache]) await Deno.remove(d, { recursive: true });
  }
});
