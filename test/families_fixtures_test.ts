/**
 * The model-family fixtures (`test/fixtures/families/`, written by
 * `tools/fixtures/family_checkpoints.ts` with llama.cpp's logits) are whole and consistent, without
 * llama.cpp: every listed file exists with its size and sha256; the logits have the manifest's
 * shape and are finite; every ablation moved llama.cpp's logits by at least 0.1; the GGUF holds
 * exactly the mapped tensors, all F32, under the manifest's architecture; each GGUF tensor is
 * rebuilt bit for bit from the HF safetensors by its recorded transform; a float64 forward of
 * each HF folder (`tools/fixtures/families/reference.ts`, written from the transformers configs)
 * gives llama.cpp's logits; and on llama3, whose architecture Kiln's own float64 reference runs,
 * that reference agrees with llama.cpp too.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { dirFiles, fileSource } from "../src/adapters/deno/file_source.ts";
import { openCheckpoint } from "../src/model/checkpoint.ts";
import { readGgufFile } from "../src/formats/gguf/header.ts";
import { ReferenceModel } from "../src/reference/model.ts";
import { type ByteTensorInfo, readSafetensorsHeader } from "../src/formats/safetensors.ts";
import type { ByteSource } from "../src/formats/source.ts";
import { referenceLogits } from "../tools/fixtures/families/reference.ts";

const ROOT = new URL("./fixtures/families/", import.meta.url).pathname;
/** The families, as `index.json` (written by the script with the folders) lists them. */
const FAMILIES: string[] = JSON.parse(await Deno.readTextFile(`${ROOT}index.json`)).families;

interface Transform {
  op: "copy" | "plus_one" | "interleave_heads" | "stack" | "computed" | "mxfp4_rows" | "columns";
  heads?: number;
  /** `mxfp4_rows` and `columns`: rows (columns) first, first + every, ... */
  every?: number;
  first?: number;
}

interface Manifest {
  family: string;
  architecture: string;
  dims: { vocab: number; layers: number };
  tokens: number[];
  logits: { file: string; shape: [number, number]; max_abs: number };
  ablations: { feature: string; max_abs_delta: number }[];
  min_delta: number;
  files: Record<string, { bytes: number; sha256: string }>;
  tensor_map: { gguf: string; hf: string[]; transform: Transform }[];
}

async function source(path: string): Promise<ByteSource> {
  const s = await fileSource(path);
  assert(s, `${path} is missing`);
  return s;
}

async function floats(
  src: ByteSource,
  offset: number,
  length: number,
): Promise<Float32Array> {
  const bytes = (await src.read(offset, length)).slice();
  return new Float32Array(bytes.buffer, 0, length / 4);
}

/** The GGUF tensor rebuilt from its HF tensors (written independently of the generator). */
function rebuild(
  t: Transform,
  parts: { shape: number[]; data: Float32Array }[],
): Float32Array {
  const first = parts[0]!;
  switch (t.op) {
    case "copy":
      return first.data;
    case "plus_one":
      return first.data.map((v) => 1 + v);
    case "stack": {
      const out = new Float32Array(
        parts.reduce((a, p) => a + p.data.length, 0),
      );
      parts.reduce((at, p) => (out.set(p.data, at), at + p.data.length), 0);
      return out;
    }
    case "interleave_heads": {
      const rows = first.shape[0]!, cols = first.data.length / rows;
      const dim = rows / t.heads!, out = new Float32Array(first.data.length);
      for (let r = 0; r < rows; r++) {
        const h = Math.floor(r / dim), i = (r % dim) >> 1, j = r % 2;
        const from = (h * dim + j * dim / 2 + i) * cols;
        out.set(first.data.subarray(from, from + cols), r * cols);
      }
      return out;
    }
    case "columns": {
      const [rows, cols] = first.shape as [number, number], n = cols / t.every!;
      return Float32Array.from(
        { length: rows * n },
        (_, i) => first.data[Math.floor(i / n) * cols + (i % n) * t.every! + t.first!]!,
      );
    }
    default:
      throw new Error(`no HF source for transform ${t.op}`);
  }
}

/** E2M1: codes 0..7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6; bit 3 negates. */
const FP4 = [0, 0.5, 1, 1.5, 2, 3, 4, 6];

/**
 * HF MXFP4 (`blocks` [E, R, G, 16] and `scales` [E, R, G], bytes) dequantized, rows
 * `first, first + every, ...` of each expert: element 2j of a block is byte j's low nibble,
 * 2j + 1 its high one, times 2^(scale - 127).
 */
function mxfp4Rows(
  blocks: { shape: number[]; bytes: Uint8Array },
  scales: Uint8Array,
  every: number,
  first: number,
): { shape: number[]; data: Float32Array } {
  const [E, R, G] = blocks.shape as [number, number, number];
  const rows = R / every, data = new Float32Array(E * rows * G * 32);
  const fp4 = (c: number) => (c & 8 ? -1 : 1) * FP4[c & 7]!;
  for (let e = 0; e < E; e++) {
    for (let r = 0; r < rows; r++) {
      for (let g = 0; g < G; g++) {
        const at = (e * R + r * every + first) * G + g, scale = 2 ** (scales[at]! - 127);
        for (let j = 0; j < 32; j++) {
          const byte = blocks.bytes[at * 16 + (j >> 1)]!;
          data[((e * rows + r) * G + g) * 32 + j] = fp4(j & 1 ? byte >> 4 : byte & 15) * scale;
        }
      }
    }
  }
  return { shape: [E, rows, G * 32], data };
}

async function manifestOf(family: string): Promise<Manifest> {
  return JSON.parse(await Deno.readTextFile(`${ROOT}${family}/manifest.json`));
}

async function logitsOf(family: string, m: Manifest): Promise<Float32Array> {
  const bytes = await Deno.readFile(`${ROOT}${family}/${m.logits.file}`);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
}

Deno.test("families fixtures: one folder per family of index.json, nothing else", async () => {
  const dirs: string[] = [];
  for await (const e of Deno.readDir(ROOT)) {
    if (e.isDirectory) dirs.push(e.name);
  }
  assertEquals(dirs.sort(), [...FAMILIES].sort());
});

for (const family of FAMILIES) {
  Deno.test(`families fixtures: ${family} files, logits and ablations`, async () => {
    const m = await manifestOf(family);
    assertEquals(m.family, family);
    for (const [name, want] of Object.entries(m.files)) {
      const bytes = await Deno.readFile(`${ROOT}${family}/${name}`);
      assertEquals(bytes.length, want.bytes, name);
      const digest = new Uint8Array(
        await crypto.subtle.digest("SHA-256", bytes),
      );
      const hex = [...digest].map((b) => b.toString(16).padStart(2, "0")).join(
        "",
      );
      assertEquals(hex, want.sha256, `${name} sha256`);
    }
    for (
      const need of [
        "model.gguf",
        m.logits.file,
        "hf/config.json",
        "hf/model.safetensors",
      ]
    ) {
      assert(need in m.files, `${need} is not listed`);
    }
    const [positions, vocab] = m.logits.shape;
    assertEquals(positions, m.tokens.length);
    assertEquals(vocab, m.dims.vocab);
    assert(m.tokens.every((t) => Number.isInteger(t) && t >= 0 && t < vocab));
    const logits = await logitsOf(family, m);
    assertEquals(logits.length, positions * vocab);
    let max = 0;
    for (const v of logits) {
      assert(Number.isFinite(v), "a logit is not finite");
      max = Math.max(max, Math.abs(v));
    }
    assertEquals(Number(max.toPrecision(6)), m.logits.max_abs);
    assert(max > 1, `logits too small to test anything (max |logit| ${max})`);
    assert(m.min_delta >= 0.1, `min_delta ${m.min_delta}`);
    assert(m.ablations.length > 0, "no ablation recorded");
    for (const a of m.ablations) {
      assert(
        a.max_abs_delta >= m.min_delta,
        `${a.feature}: ${a.max_abs_delta}`,
      );
    }
    const config = JSON.parse(
      await Deno.readTextFile(`${ROOT}${family}/hf/config.json`),
    );
    assertEquals(config.num_hidden_layers, m.dims.layers);
    assertEquals(config.vocab_size, vocab);
  });

  Deno.test(`families fixtures: ${family} GGUF tensors are the HF tensors, transformed`, async () => {
    const m = await manifestOf(family);
    const gguf = await readGgufFile(
      await source(`${ROOT}${family}/model.gguf`),
    );
    assertEquals(gguf.metadata.string("general.architecture"), m.architecture);
    assertEquals(
      gguf.metadata.uint(`${m.architecture}.block_count`),
      m.dims.layers,
    );
    assertEquals(
      gguf.tensors.map((t) => t.name).sort(),
      m.tensor_map.map((e) => e.gguf).sort(),
    );
    const bytes = new Map<string, ByteTensorInfo>();
    const hf = await readSafetensorsHeader(
      await source(`${ROOT}${family}/hf/model.safetensors`),
      bytes,
    );
    assertEquals(
      [...hf.keys(), ...bytes.keys()].sort(),
      // Each HF tensor once (gpt-oss's fused gate_up feeds both ffn_gate_exps and ffn_up_exps).
      [...new Set(m.tensor_map.flatMap((e) => e.hf))].sort(),
    );
    for (const e of m.tensor_map) {
      const t = gguf.tensors.find((x) => x.name === e.gguf)!;
      assertEquals(t.ggmlType, 0, `${e.gguf} is not F32`);
      if (e.transform.op === "computed") continue;
      if (e.transform.op === "mxfp4_rows") {
        const [b, s] = e.hf.map((n) => bytes.get(n)!);
        const raw = async (i: ByteTensorInfo) => (await i.source.read(i.offset, i.length)).slice();
        const want = mxfp4Rows(
          { shape: b!.shape, bytes: await raw(b!) },
          await raw(s!),
          e.transform.every!,
          e.transform.first!,
        );
        assertEquals([...t.dims].reverse(), want.shape, `${e.gguf} shape`);
        assertEquals(await floats(t.source, t.offset, t.length), want.data, e.gguf);
        continue;
      }
      const parts = await Promise.all(e.hf.map(async (n) => {
        const info = hf.get(n)!;
        assertEquals(info.dtype, "f32");
        return {
          shape: info.shape,
          data: await floats(info.source, info.offset, info.length),
        };
      }));
      const want = rebuild(e.transform, parts);
      const got = await floats(t.source, t.offset, t.length);
      const shape = e.transform.op === "stack"
        ? [parts.length, ...parts[0]!.shape]
        : e.transform.op === "columns"
        ? [parts[0]!.shape[0]!, parts[0]!.shape[1]! / e.transform.every!]
        : parts[0]!.shape;
      assertEquals([...t.dims].reverse(), shape, `${e.gguf} shape`);
      assertEquals(got, want, `${e.gguf} from ${e.hf.join(", ")}`);
    }
  });
}

/**
 * llama.cpp's logits within this of a float64 forward of the HF folder: float32 rounding, and on
 * Gemma the F16 table llama.cpp's CPU GELU reads (measured 2.3e-3 and 2.9e-3 there, at most 4e-5
 * elsewhere). A wrong convention (norm offset, q/k order, window, cap, scale) costs 0.1 or more.
 */
const REFERENCE_TOLERANCE: Record<string, number> = { gemma2: 5e-3, gemma3: 5e-3 };

for (const family of FAMILIES) {
  Deno.test(`families fixtures: ${family} HF folder run in float64 gives llama.cpp's logits`, async () => {
    const m = await manifestOf(family);
    const config = JSON.parse(await Deno.readTextFile(`${ROOT}${family}/hf/config.json`));
    const bytes = new Map<string, ByteTensorInfo>();
    const hf = await readSafetensorsHeader(
      await source(`${ROOT}${family}/hf/model.safetensors`),
      bytes,
    );
    const values = new Map<string, Float64Array>();
    for (const [name, info] of hf) {
      values.set(name, Float64Array.from(await floats(info.source, info.offset, info.length)));
    }
    // U8 tensors (MXFP4 blocks and scales) as their byte values.
    for (const [name, info] of bytes) {
      values.set(name, Float64Array.from(await info.source.read(info.offset, info.length)));
    }
    const rows = referenceLogits(config, (name) => {
      const v = values.get(name);
      assert(v, `${family}: hf/model.safetensors has no ${name}`);
      return v;
    }, m.tokens);
    const logits = await logitsOf(family, m);
    const vocab = m.logits.shape[1];
    let worst = 0;
    rows.forEach((row, p) =>
      row.forEach((v, t) => worst = Math.max(worst, Math.abs(v - logits[p * vocab + t]!)))
    );
    assert(worst <= (REFERENCE_TOLERANCE[family] ?? 2e-4), `max |float64 - llama.cpp| ${worst}`);
  });
}

Deno.test("families fixtures: Kiln's float64 reference on llama3's HF folder agrees with llama.cpp", async () => {
  const m = await manifestOf("llama3");
  const ck = await openCheckpoint(dirFiles(`${ROOT}llama3/hf`));
  const rows = (await ReferenceModel.load(ck.config, ck.weights)).logits(
    m.tokens,
  );
  const logits = await logitsOf("llama3", m);
  const vocab = m.logits.shape[1];
  let worst = 0;
  rows.forEach((row, p) =>
    row.forEach((v, t) => worst = Math.max(worst, Math.abs(v - logits[p * vocab + t]!)))
  );
  // Measured 4e-5 (llama.cpp computes in float32); a wrong permutation or RoPE factor is O(1).
  assert(worst < 1e-3, `max |float64 - llama.cpp| ${worst}`);
});
