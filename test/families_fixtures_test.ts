/**
 * The model-family fixtures (`test/fixtures/families/`, written by
 * `tools/fixtures/family_checkpoints.ts` with llama.cpp's logits) are whole and consistent, without
 * llama.cpp, for Kiln's families and the pending ones (`index.json`'s two lists, split by whether
 * Kiln runs the manifest's architecture): every listed file exists with its size and sha256; the
 * logits have the manifest's shape and are finite; every ablation moved llama.cpp's logits by at
 * least 0.1; the GGUF holds exactly the mapped tensors, all F32, under the manifest's
 * architecture; each GGUF tensor is rebuilt bit for bit, shape included, from the HF safetensors by
 * its recorded transform; a float64 forward of each HF folder (`tools/fixtures/families/
 * reference.ts`, written from the transformers configs, or the family's own forward where the
 * manifest names another file) gives llama.cpp's logits; and on llama3, whose architecture Kiln's
 * own float64 reference runs, that reference agrees with llama.cpp too.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { dirFiles, fileSource } from "../src/adapters/deno/file_source.ts";
import { openCheckpoint } from "../src/model/checkpoint.ts";
import { archByGguf } from "../src/model/arch/mod.ts";
import { readGgufFile } from "../src/formats/gguf/header.ts";
import { ReferenceModel } from "../src/reference/model.ts";
import { type ByteTensorInfo, readSafetensorsHeader } from "../src/formats/safetensors.ts";
import type { ByteSource } from "../src/formats/source.ts";
import { referenceLogits } from "../tools/fixtures/families/reference.ts";
import { FAMILIES as BUILDERS } from "../tools/fixtures/family_checkpoints.ts";

const ROOT = new URL("./fixtures/families/", import.meta.url).pathname;
/**
 * `index.json` (written by the script with the folders): `families`, whose architecture Kiln runs,
 * and `pending`, ground truth for families Kiln does not run yet.
 */
const INDEX: { families: string[]; pending: string[] } = JSON.parse(
  await Deno.readTextFile(`${ROOT}index.json`),
);
/** Every fixture checked here: both lists. */
const FAMILIES = [...INDEX.families, ...INDEX.pending];

interface Transform {
  op:
    | "copy"
    | "plus_one"
    | "interleave_heads"
    | "stack"
    | "squeeze"
    | "computed"
    | "mxfp4_rows"
    | "columns"
    | "rows"
    | "reshape"
    | "neg_exp"
    | "chain"
    | "tile_v_heads";
  heads?: number;
  /** `squeeze`: the HF axis (of extent 1) the GGUF tensor lacks; `tile_v_heads`: rows 0, columns 1. */
  axis?: number;
  /** `mxfp4_rows` and `columns`: rows (columns) first, first + every, ...; `rows`: first row. */
  every?: number;
  first?: number;
  /** `rows`: how many rows, from `first`. */
  count?: number;
  /** `reshape`: the GGUF shape (row-major, outermost first). */
  shape?: number[];
  /** `chain`: transforms applied in order. */
  steps?: Transform[];
  /** `tile_v_heads`: heads start at index `offset` of `axis`, `head_dim` wide each. */
  offset?: number;
  k_heads?: number;
  v_per_k?: number;
  head_dim?: number;
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
  float64_reference: { max_abs_error: number; meaning: string };
}

async function source(path: string): Promise<ByteSource> {
  const s = await fileSource(path);
  assert(s, `${path} is missing`);
  return s;
}

async function floats(src: ByteSource, offset: number, length: number): Promise<Float32Array> {
  const bytes = (await src.read(offset, length)).slice();
  return new Float32Array(bytes.buffer, 0, length / 4);
}

interface Part {
  shape: number[];
  data: Float32Array;
}

/** Index `i` (along the tiled axis) of a `tile_v_heads` tensor: where it is in the HF tensor. */
function untiled(t: Transform, i: number): number {
  if (i < t.offset!) return i;
  const d = t.head_dim!, head = Math.floor((i - t.offset!) / d), within = (i - t.offset!) % d;
  // llama.cpp's head j * k_heads + g is HF's head g * v_per_k + j.
  const hf = (head % t.k_heads!) * t.v_per_k! + Math.floor(head / t.k_heads!);
  return t.offset! + hf * d + within;
}

/** The GGUF tensor (shape outermost first) rebuilt from its HF tensors, independently of the generator. */
function rebuild(t: Transform, parts: Part[]): Part {
  const first = parts[0]!, { shape, data } = first;
  const rows = shape[0]!, cols = data.length / rows;
  switch (t.op) {
    case "copy":
      return first;
    case "squeeze":
      assertEquals(shape[t.axis!], 1, `squeeze: axis ${t.axis} of [${shape}]`);
      return { shape: shape.filter((_, i) => i !== t.axis), data };
    case "reshape":
      assertEquals(t.shape!.reduce((a, b) => a * b, 1), data.length, `reshape to [${t.shape}]`);
      return { shape: t.shape!, data };
    case "plus_one":
      return { shape, data: data.map((v) => 1 + v) };
    case "neg_exp": // -exp in float64, rounded to float32 on the store
      return { shape, data: data.map((v) => -Math.exp(v)) };
    case "chain":
      return t.steps!.reduce((x, step) => rebuild(step, [x]), first);
    case "rows":
      return {
        shape: [t.count!, ...shape.slice(1)],
        data: data.slice(t.first! * cols, (t.first! + t.count!) * cols),
      };
    case "stack": {
      const out = new Float32Array(parts.reduce((a, p) => a + p.data.length, 0));
      parts.reduce((at, p) => (out.set(p.data, at), at + p.data.length), 0);
      return { shape: [parts.length, ...shape], data: out };
    }
    case "interleave_heads": {
      const dim = rows / t.heads!, out = new Float32Array(data.length);
      for (let r = 0; r < rows; r++) {
        const h = Math.floor(r / dim), i = (r % dim) >> 1, j = r % 2;
        const from = (h * dim + j * dim / 2 + i) * cols;
        out.set(data.subarray(from, from + cols), r * cols);
      }
      return { shape, data: out };
    }
    case "columns": {
      const n = cols / t.every!;
      const at = (i: number) => Math.floor(i / n) * cols + (i % n) * t.every! + t.first!;
      return {
        shape: [rows, n],
        data: Float32Array.from({ length: rows * n }, (_, i) => data[at(i)]!),
      };
    }
    case "tile_v_heads": {
      const extent = t.offset! + t.k_heads! * t.v_per_k! * t.head_dim!;
      assertEquals(extent, t.axis === 0 ? rows : cols, `tile_v_heads: heads of [${shape}]`);
      const at = (i: number) => {
        const r = Math.floor(i / cols), c = i % cols;
        return t.axis === 0 ? untiled(t, r) * cols + c : r * cols + untiled(t, c);
      };
      return { shape, data: Float32Array.from({ length: data.length }, (_, i) => data[at(i)]!) };
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

/** A float64 forward of an HF folder: one row of logits per position. */
type Forward = typeof referenceLogits;

/**
 * The float64 forward the manifest names (`float64_reference.meaning`): `reference.ts`'s, or the
 * family's own (`Family.reference`, which must name the same file).
 */
function forwardOf(family: string, m: Manifest): Forward {
  const file = /tools\/fixtures\/families\/([\w.-]+\.ts)/.exec(m.float64_reference.meaning)?.[1];
  assert(file, `${family}: the manifest names no float64 forward`);
  if (file === "reference.ts") return referenceLogits;
  const build = BUILDERS[family];
  assert(build, `${family}: not a family of tools/fixtures/family_checkpoints.ts`);
  const own = build().reference;
  assertEquals(own?.file, file, `${family}: the family's own float64 forward`);
  return own!.logits;
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

Deno.test("families fixtures: index.json's families are those Kiln runs, pending the others", async () => {
  for (const [list, runs] of [[INDEX.families, true], [INDEX.pending, false]] as const) {
    assertEquals(list, [...list].sort());
    for (const family of list) {
      const arch = (await manifestOf(family)).architecture;
      assertEquals(archByGguf(arch) !== undefined, runs, `${family} (${arch})`);
    }
  }
});

for (const family of FAMILIES) {
  Deno.test(`families fixtures: ${family} files, logits and ablations`, async () => {
    const m = await manifestOf(family);
    assertEquals(m.family, family);
    for (const [name, want] of Object.entries(m.files)) {
      const bytes = await Deno.readFile(`${ROOT}${family}/${name}`);
      assertEquals(bytes.length, want.bytes, name);
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
      const hex = [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
      assertEquals(hex, want.sha256, `${name} sha256`);
    }
    for (const need of ["model.gguf", m.logits.file, "hf/config.json", "hf/model.safetensors"]) {
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
      assert(a.max_abs_delta >= m.min_delta, `${a.feature}: ${a.max_abs_delta}`);
    }
    const config = JSON.parse(await Deno.readTextFile(`${ROOT}${family}/hf/config.json`));
    assertEquals(config.num_hidden_layers, m.dims.layers);
    assertEquals(config.vocab_size, vocab);
  });

  Deno.test(`families fixtures: ${family} GGUF tensors are the HF tensors, transformed`, async () => {
    const m = await manifestOf(family);
    const gguf = await readGgufFile(await source(`${ROOT}${family}/model.gguf`));
    assertEquals(gguf.metadata.string("general.architecture"), m.architecture);
    assertEquals(gguf.metadata.uint(`${m.architecture}.block_count`), m.dims.layers);
    assertEquals(gguf.tensors.map((t) => t.name).sort(), m.tensor_map.map((e) => e.gguf).sort());
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
        return { shape: info.shape, data: await floats(info.source, info.offset, info.length) };
      }));
      const want = rebuild(e.transform, parts);
      assertEquals([...t.dims].reverse(), want.shape, `${e.gguf} shape`);
      const got = await floats(t.source, t.offset, t.length);
      assertEquals(got, want.data, `${e.gguf} from ${e.hf.join(", ")}`);
    }
  });
}

/**
 * llama.cpp's logits within this of a float64 forward of the HF folder: float32 rounding, and on
 * Gemma the F16 table llama.cpp's CPU GELU reads (measured 2.3e-3 and 2.9e-3 there), on qwen35
 * float32 rounding magnified by the gated norm of small delta-net outputs (measured 1.1e-4: the
 * bound is 4.5x that; see the fixtures' README), at most 5.2e-5 elsewhere (the 2e-4 default is
 * 3.8x that). A wrong convention (norm offset, q/k order, window, cap, scale) costs 0.1 or more.
 */
const REFERENCE_TOLERANCE: Record<string, number> = { gemma2: 5e-3, gemma3: 5e-3, qwen35: 5e-4 };

/**
 * Max |float64 forward of the HF folder - llama.cpp's logits|, the forward the manifest names;
 * `plant` may change an HF tensor's values first (a planted error).
 */
async function float64Error(
  family: string,
  plant: (name: string, v: Float64Array) => Float64Array = (_, v) => v,
): Promise<number> {
  const m = await manifestOf(family);
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}${family}/hf/config.json`));
  const bytes = new Map<string, ByteTensorInfo>();
  const hf = await readSafetensorsHeader(
    await source(`${ROOT}${family}/hf/model.safetensors`),
    bytes,
  );
  const values = new Map<string, Float64Array>();
  for (const [name, info] of hf) {
    const v = Float64Array.from(await floats(info.source, info.offset, info.length));
    values.set(name, plant(name, v));
  }
  // U8 tensors (MXFP4 blocks and scales) as their byte values.
  for (const [name, info] of bytes) {
    values.set(name, Float64Array.from(await info.source.read(info.offset, info.length)));
  }
  const rows = forwardOf(family, m)(config, (name) => {
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
  return worst;
}

for (const family of FAMILIES) {
  Deno.test(`families fixtures: ${family} HF folder run in float64 gives llama.cpp's logits`, async () => {
    const worst = await float64Error(family);
    assert(worst <= (REFERENCE_TOLERANCE[family] ?? 2e-4), `max |float64 - llama.cpp| ${worst}`);
  });
}

/** `v` ([..., n] row-major) with each innermost row reversed. */
function reverseRows(v: Float64Array, n: number): Float64Array {
  return v.map((_, i) => v[i - (i % n) + n - 1 - (i % n)]!);
}

for (const family of FAMILIES) {
  const m = await manifestOf(family);
  // Squeezed alone or as a step of a chain (qwen35's conv1d is squeezed, then its heads tiled).
  const squeezes = (t: Transform): boolean =>
    t.op === "squeeze" || (t.op === "chain" && t.steps!.some(squeezes));
  const squeezed = new Set(m.tensor_map.filter((e) => squeezes(e.transform)).flatMap((e) => e.hf));
  if (squeezed.size === 0) continue;
  Deno.test(`families fixtures: ${family} planted error: squeezed (conv) taps reversed miss llama.cpp`, async () => {
    const hf = await readSafetensorsHeader(
      await source(`${ROOT}${family}/hf/model.safetensors`),
      new Map(),
    );
    const worst = await float64Error(
      family,
      (name, v) => squeezed.has(name) ? reverseRows(v, hf.get(name)!.shape.at(-1)!) : v,
    );
    // A wrong tap order is a wrong convention: it must cost what the ablations do (>= 0.1).
    assert(worst >= 0.1, `taps reversed, yet max |float64 - llama.cpp| is only ${worst}`);
  });
}

Deno.test("families fixtures: Kiln's float64 reference on llama3's HF folder agrees with llama.cpp", async () => {
  const m = await manifestOf("llama3");
  const ck = await openCheckpoint(dirFiles(`${ROOT}llama3/hf`));
  const rows = (await ReferenceModel.load(ck.config, ck.weights)).logits(m.tokens);
  const logits = await logitsOf("llama3", m);
  const vocab = m.logits.shape[1];
  let worst = 0;
  rows.forEach((row, p) =>
    row.forEach((v, t) => worst = Math.max(worst, Math.abs(v - logits[p * vocab + t]!)))
  );
  // Measured 4e-5 (llama.cpp computes in float32); a wrong permutation or RoPE factor is O(1).
  assert(worst < 1e-3, `max |float64 - llama.cpp| ${worst}`);
});
