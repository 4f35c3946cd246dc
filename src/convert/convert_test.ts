import { deepStrictEqual, ok, rejects, strictEqual as equal, throws } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { EngineError } from "../contract/errors.ts";
import { decodeWeights, type WeightDtype } from "../gpu/dtype.ts";
import { dequantize } from "../gpu/formats/registry.ts";
import { parseConfig } from "../model/config.ts";
import { readCheckpoint } from "../formats/safetensors.ts";
import { blobSource } from "../formats/source.ts";
import { readHfCheckpoint, ropeRowPermutation, writeHfAsGguf } from "./convert.ts";
import { openGguf } from "../model/gguf/load.ts";
import { type GgufMix, parseMix, useMoreBits } from "./quant_mix.ts";
import { type GgufTensorInfo, hfTensors, unpermuteQkRows } from "../model/gguf/tensors.ts";
import { ggufConfig } from "../model/gguf/config.ts";
import { readGgufFile } from "../formats/gguf/header.ts";

const root = new URL("../../", import.meta.url).pathname;
const fixture = (name: string) => `${root}test/fixtures/models/${name}`;

/** Each model, and its tensors that Q4_K_M gives more bits (Q6_K, or Q8_0 where rows are short). */
const MODELS: { dir: string; q4km: { more: string[]; moreType: string; rest: string } }[] = [
  {
    dir: `${root}models/fortune`, // 6 layers, tied: layers 2 and 5 use more bits
    q4km: {
      more: ["token_embd", "blk.2.attn_v", "blk.5.attn_v", "blk.2.ffn_down", "blk.5.ffn_down"],
      moreType: "Q6_K",
      rest: "Q4_K",
    },
  },
  {
    dir: fixture("llama-gqa-f32"), // 2 layers, untied; hidden 64: no K-quant fits
    q4km: { more: ["output", "blk.1.attn_v", "blk.1.ffn_down"], moreType: "Q8_0", rest: "Q5_0" },
  },
  {
    dir: fixture("qwen2-bias-tied-f16"), // 3 layers, tied; hidden 96
    q4km: {
      more: ["token_embd", "blk.2.attn_v", "blk.2.ffn_down"],
      moreType: "Q8_0",
      rest: "Q5_0",
    },
  },
  {
    dir: fixture("llama-mqa-bf16"), // 2 layers, untied; hidden 64
    q4km: { more: ["output", "blk.1.attn_v", "blk.1.ffn_down"], moreType: "Q8_0", rest: "Q5_0" },
  },
];

/** Largest |dequantized - source| allowed in a block, as a fraction of its largest |value|. */
const BOUND: Record<string, number> = {
  F32: 0,
  F16: 1e-3,
  BF16: 4e-3,
  Q8_0: 0.005,
  Q6_K: 0.03,
  Q4_0: 0.13, // the largest |value| maps to -8, the other sign clips at +7
  Q4_1: 0.08,
  Q5_0: 0.065, // as Q4_0 at half the step
  Q4_K: 0.125, // 6-bit sub-block scales and minimums add to the 4-bit step
};

async function convert(dir: string, mix: GgufMix) {
  const parts: Uint8Array[] = [];
  const report = await writeHfAsGguf(
    await readHfCheckpoint(dirFiles(dir)),
    (b) => parts.push(b.slice()),
    { mix },
  );
  const blob = new Blob(parts as Uint8Array<ArrayBuffer>[]);
  equal(blob.size, report.bytes);
  const open = (n: string) => Promise.resolve(blobSource(blob, n));
  const file = await readGgufFile(blobSource(blob, "m.gguf"));
  const config = ggufConfig(file.metadata, new Set(file.tensors.map((t) => t.name)));
  // openGguf's weight check refuses F32 biases beside quantized weights (weights.ts on this
  // base), which llama.cpp's files have; the other models go through it whole.
  if (!config.attentionBias) deepStrictEqual((await openGguf("m.gguf", open)).config, config);
  const model = { config, metadata: file.metadata, tensors: hfTensors(config, file.tensors) };
  return { report, model };
}

function expectedType(name: string, mix: GgufMix, q4km: (typeof MODELS)[0]["q4km"], cols: number) {
  if (!name.endsWith(".weight") || /norm/.test(name)) return "F32";
  const base = name.replace(/\.weight$/, "");
  if (mix === "q4_k_m") return q4km.more.includes(base) ? q4km.moreType : q4km.rest;
  if (mix === "q6_k") return cols % 256 === 0 ? "Q6_K" : "Q8_0";
  return mix.toUpperCase();
}

async function values(t: GgufTensorInfo): Promise<Float64Array> {
  const bytes = await t.source.read(t.offset, t.length);
  const count = t.shape.reduce((a, d) => a * d, 1);
  return t.dtype === "f32" || t.dtype === "f16" || t.dtype === "bf16"
    ? decodeWeights(bytes, t.dtype as WeightDtype)
    : dequantize(t.dtype, bytes, count);
}

for (const { dir, q4km } of MODELS) {
  const name = dir.split("/").pop()!;
  Deno.test(`${name}: each mix reads back with the config, the mix's types and values near the source`, async () => {
    const source = await readCheckpoint((n) => dirFiles(dir).open(n));
    const hfConfig = parseConfig(await Deno.readTextFile(`${dir}/config.json`));
    for (const mix of ["q8_0", "q4_0", "q6_k", "q4_k_m"] as const) {
      const { report, model } = await convert(dir, mix);
      const { dtype: _a, ...got } = model.config;
      const { dtype: _b, ...want } = hfConfig;
      deepStrictEqual(got, want, `${mix}: config`);
      equal(model.metadata.uint("general.quantization_version"), 2);
      equal(report.tensors.length, model.tensors.size);
      for (const t of model.tensors.values()) {
        const cols = t.shape[t.shape.length - 1]!;
        equal(t.dtype.toUpperCase(), expectedType(t.ggufName, mix, q4km, cols), t.ggufName);
        const src = source.get(t.name);
        ok(src, `${t.name} is in the checkpoint`);
        const want = decodeWeights(await src.source.read(src.offset, src.length), src.dtype);
        const got = await values(t);
        const rows = t.shape.length === 1 ? 1 : t.shape[0]!;
        const rowLen = got.length / rows;
        const order = t.ropeInterleave
          ? unpermuteQkRows(rows, t.ropeInterleave.headDim, t.ropeInterleave.heads)
          : undefined;
        const type = t.dtype.toUpperCase();
        const block = type.endsWith("_K") ? 256 : type.startsWith("Q") ? 32 : rowLen;
        for (let r = 0; r < rows; r++) {
          const stored = order ? order[r]! : r;
          for (let b = 0; b < rowLen; b += block) {
            let maxAbs = 0;
            let maxErr = 0;
            for (let j = b; j < b + block; j++) {
              const w = want[r * rowLen + j]!;
              maxAbs = Math.max(maxAbs, Math.abs(w));
              maxErr = Math.max(maxErr, Math.abs(got[stored * rowLen + j]! - w));
            }
            if (maxErr > BOUND[type]! * maxAbs + 1e-7) {
              throw new Error(
                `${mix} ${t.ggufName} row ${r} at ${b}: error ${maxErr} of ${maxAbs}`,
              );
            }
          }
        }
      }
    }
  });
}

Deno.test("llama.cpp's more-bits layers: the first and last eighth, every third between", () => {
  const picked = (n: number) => [...Array(n).keys()].filter((i) => useMoreBits(i, n));
  deepStrictEqual(picked(32), [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]);
  deepStrictEqual(picked(6), [2, 5]);
  deepStrictEqual(picked(2), [1]);
});

Deno.test("q/k permutation, and bad mixes and checkpoints are InvalidArgument", async () => {
  deepStrictEqual(ropeRowPermutation(2, 4), [0, 2, 1, 3, 4, 6, 5, 7]);
  const invalid = (needle: string) => (e: unknown) =>
    e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(needle);
  throws(() => parseMix("q5_k"), invalid("q5_k"));
  equal(parseMix("Q4_K_M"), "q4_k_m");
  await rejects(readHfCheckpoint(dirFiles(`${root}no-such-model`)), invalid("config.json"));
});
