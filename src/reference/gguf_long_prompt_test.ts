/**
 * Prompts longer than one prefill chunk, in every weight format Kiln writes: each block type of
 * the registry with an encoder (so a format added there is tested here too), F16, and the q4_k_m
 * mix (a layer whose q/k/v and down are Q4_K and Q6_K parts: products over split weights). The
 * prompt is prefilled in chunks as the engine schedules it: every chunk but the last asks for no
 * logits (the step shape that once failed on quantized weights past 256 tokens with "m must be an
 * integer >= 1, got 0"), and the last chunk's first, middle and last positions are held to
 * `verify`'s f32 bound against a float64 pass over the same (dequantized) weights.
 *
 * The model is fortune's first layer (hidden 256, so every K-quant's 256-element blocks fit each
 * row; its embedding, tied LM head, attention and MLP), with its context raised to 4096 on both
 * sides (RoPE takes any position) so 2048 tokens fit. One float64 pass over the longest prompt
 * serves every length: the model is causal. Every case runs every length at chunks of 256 (the
 * engine's default `max_num_batched_tokens`); chunks of 7, 64 and 100 (7 divides 7 and 511, 64
 * divides 256 and 512, 100 none) take turns over the cases at lengths up to 513: all three on
 * every case would add about a third to the time. Measured on lavapipe (2 shared cores): 2 min for
 * the file, per case 3-5 s for the quantization and the float64 pass, 6-9 s on the GPU, of which
 * the 2048-token prompt takes about 7 s.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import type { TensorDtype } from "../gpu/dtype.ts";
import { QUANT_FORMATS, QUANT_TYPES } from "../gpu/formats/registry.ts";
import { type Checkpoint, openCheckpoint } from "../model/checkpoint.ts";
import { Forward } from "../runtime/forward.ts";
import { GpuModel, type GpuWeight } from "../runtime/gpu_model.ts";
import { ReferenceModel } from "./model.ts";
import { fileListFiles } from "../formats/source.ts";
import { tolerance } from "./verify.ts";
import { ggufMetadata, ggufTensors, planTensors, readHfCheckpoint } from "../convert/convert.ts";
import type { GgufMix, GgufTensorType } from "../convert/quant_mix.ts";
import { writeGguf } from "../convert/writer.ts";
import { testGpu, withErrorScopes } from "../../test/support/gpu.ts";
import { MODELS } from "../../test/support/models.ts";

const FORTUNE = MODELS.find((m) => m.name === "fortune")!;
const LENGTHS = [1, 7, 8, 9, 255, 256, 257, 511, 512, 513, 2048];
/** The engine's default chunk, run at every length. */
const CHUNK = 256;
/** Chunks that divide some lengths and not others, one per case in turn, up to `SHORT`. */
const OTHER_CHUNKS = [7, 64, 100];
const SHORT = 513;
const POSITIONS = 4096;
const LAYERS = 1;

/** A case: every matrix in one type, or a mix. */
type Case = { name: string; type: GgufTensorType } | { name: string; mix: GgufMix };

const CASES: Case[] = [
  { name: "F16", type: "F16" },
  // Every format Kiln can write (the imatrix i-quants have no encoder: their products are the same
  // kernels, tested over random blocks in matvec_quant_test).
  ...QUANT_TYPES.filter((t) => QUANT_FORMATS[t].encode).map((type) => ({ name: type, type })),
  { name: "q4_k_m", mix: "q4_k_m" },
];

/** Fortune's first `LAYERS` layers as a GGUF checkpoint in `c`'s types, `POSITIONS` long. */
async function checkpoint(c: Case): Promise<Checkpoint> {
  const hf = await readHfCheckpoint(dirFiles(FORTUNE.dir.pathname));
  const ck = {
    ...hf,
    config: { ...hf.config, numLayers: LAYERS, maxPositionEmbeddings: POSITIONS },
    weights: { ...hf.weights, layers: hf.weights.layers.slice(0, LAYERS) },
  };
  const plan = "mix" in c
    ? planTensors(ck, c.mix)
    : planTensors(ck).map((p) => (p.role === "vector" ? p : { ...p, type: c.type }));
  const parts: Uint8Array[] = [];
  await writeGguf((b) => void parts.push(b.slice()), ggufMetadata(ck), ggufTensors(ck, plan));
  const file = new File(parts as BlobPart[], `fortune-${c.name}.gguf`);
  const out = await openCheckpoint(fileListFiles([file]));
  equal(out.config.numLayers, LAYERS);
  return out;
}

/** The dtypes of every matrix the model holds on the GPU. */
function matrixDtypes(m: GpuModel): Set<TensorDtype> {
  const ws: GpuWeight[] = [
    m.embed,
    m.lmHead,
    ...m.layers.flatMap((l) => [l.qkv!, l.o!, l.gateUp!, l.down!]),
  ];
  return new Set(ws.flatMap((w) => w.parts.map((p) => p.dtype)));
}

/** A deterministic prompt over the vocabulary. */
function promptIds(length: number, vocab: number): number[] {
  let s = 0x2545f491;
  return Array.from({ length }, () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) % vocab;
  });
}

/**
 * The logits a prompt of each of `lengths` (ascending) gets when prefilled in chunks of `chunk`
 * tokens as the engine schedules it: chunks without logits, then the last chunk with logits at
 * its first, middle and last positions. The lengths share the chunks before their last ones, as
 * a prefix cache would (a prefix's keys and values do not depend on what follows it): each runs
 * once, without logits, and each length's last chunk runs over the cache they wrote (its own
 * slots it writes itself, before its attention reads them).
 */
async function* chunkedPrefills(
  fwd: Forward,
  ids: readonly number[],
  lengths: readonly number[],
  chunk: number,
): AsyncGenerator<{ length: number; positions: number[]; rows: Float32Array }> {
  const blockTable = Array.from({ length: POSITIONS / fwd.model.blockSize }, (_, i) => i);
  const step = (start: number, end: number, wanted: number[]) => {
    const positions = Array.from({ length: end - start }, (_, i) => start + i);
    return fwd.run({
      tokens: ids.slice(start, end),
      positions,
      slots: positions,
      tableOffsets: positions.map(() => 0),
      blockTable,
      logitRows: wanted.map((p) => p - start),
    });
  };
  ok(lengths.every((l, i) => i === 0 || l > lengths[i - 1]!), "lengths ascend");
  let done = 0; // positions written by chunks without logits
  for (const length of lengths) {
    const last = Math.floor((length - 1) / chunk) * chunk;
    for (; done < last; done += chunk) await step(done, done + chunk, []);
    const positions = [...new Set([last, (last + length - 1) >> 1, length - 1])];
    yield { length, positions, rows: await step(last, length, positions) };
  }
}

/** `rows` (logits at `positions`) against the float64 reference, as `verify` bounds them. */
function check(what: string, positions: number[], rows: Float32Array, ref: Float64Array[]) {
  const V = ref[0]!.length;
  const tol = tolerance("f32");
  equal(rows.length, positions.length * V, `${what}: one row per position`);
  let maxErr = 0, refMax = 0, errSq = 0, refSq = 0;
  positions.forEach((p, r) => {
    const want = ref[p]!;
    for (let v = 0; v < V; v++) {
      const e = rows[r * V + v]! - want[v]!;
      // NaN fails both bounds below.
      maxErr = Number.isNaN(e) ? NaN : Math.max(maxErr, Math.abs(e));
      refMax = Math.max(refMax, Math.abs(want[v]!));
      errSq += e * e;
      refSq += want[v]! ** 2;
    }
  });
  const bound = tol.maxAbs * Math.max(1, refMax);
  const relL2 = Math.sqrt(errSq / refSq);
  const line = `${what}: max|err| ${maxErr.toExponential(2)} (bound ${
    bound.toExponential(2)
  }), rel_l2 ${relL2.toExponential(2)} (bound ${tol.relL2})`;
  ok(maxErr <= bound && relL2 <= tol.relL2, line);
  return maxErr / bound;
}

for (const [i, c] of CASES.entries()) {
  const other = OTHER_CHUNKS[i % OTHER_CHUNKS.length]!;
  Deno.test(`long prompts, ${c.name}: chunked prefill past one chunk matches float64 (chunks ${CHUNK}, ${other})`, async () => {
    const t0 = performance.now();
    const gpu = await testGpu();
    const ck = await checkpoint(c);
    const longest = promptIds(Math.max(...LENGTHS), ck.config.vocabSize);
    const ref = (await ReferenceModel.load(ck.config, ck.weights)).logits(longest);
    const t1 = performance.now();
    let worst = 0;
    await withErrorScopes(gpu.device, async () => {
      const model = await GpuModel.fromCheckpoint(gpu, ck, {
        kvDtype: "f32",
        kvBlocks: POSITIONS / 16,
      });
      const fwd = new Forward(model);
      try {
        const dtypes = matrixDtypes(model);
        if ("type" in c) equal([...dtypes].join(), c.type === "F16" ? "f16" : c.type);
        else {
          const qkv = new Set(model.layers[0]!.qkv!.parts.map((p) => p.dtype));
          ok(qkv.size > 1, `${c.name}: q/k/v in parts of two types`);
        }
        const short = LENGTHS.filter((l) => l <= SHORT);
        const runs: [number[], number][] = [[LENGTHS, CHUNK], [short, other]];
        for (const [lengths, chunk] of runs) {
          for await (
            const { length, positions, rows } of chunkedPrefills(fwd, longest, lengths, chunk)
          ) {
            const what = `${c.name} length ${length} chunk ${chunk}`;
            worst = Math.max(worst, check(what, positions, rows, ref));
          }
        }
      } finally {
        fwd.destroy();
        model.destroy();
      }
    });
    const t2 = performance.now();
    console.log(
      `  ${c.name}: worst max|err| ${(100 * worst).toFixed(0)}% of the bound; float64 ${
        ((t1 - t0) / 1000).toFixed(1)
      } s, GPU ${((t2 - t1) / 1000).toFixed(1)} s`,
    );
  });
}
