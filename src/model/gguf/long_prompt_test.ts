/**
 * Prompts longer than one prefill chunk, on quantized GGUF files and on the float checkpoint:
 * fortune's prompt is prefilled in chunks the way the engine schedules it (every chunk but the
 * last asks for no logits, the step shape that once failed with "m must be an integer >= 1, got
 * 0" on quantized weights past 256 tokens), and the logits at the last position and at the
 * first position of the last chunk are held to `verify`'s f32 bound against the float64
 * reference on the same (dequantized) weights.
 *
 * One float64 pass over the longest prompt serves every length: the model is causal, so the
 * logits at position t do not depend on what follows. Fortune's config allows 1024 positions;
 * the test raises it to 4096 on both sides (RoPE takes any position) so that 2048 tokens fit.
 * Lengths 1, 7, 8, 9, 255, 256, 257, 511, 512 and 513 run at a chunk of 256 (the engine's
 * default) for every file, and 2048 for F16 and Q4_K_M; chunks of 7 and 100 (dividing some
 * lengths, not others) run up to 513 on Q4_K_M. The float64 pass over 2048 tokens takes most of
 * a minute on this machine, so Q8_0, Q4_0 and Q6_K stop at 513 (2.5 min in all on lavapipe).
 */
import { ok } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { type Checkpoint, openCheckpoint } from "../checkpoint.ts";
import { Forward } from "../forward.ts";
import { GpuModel } from "../gpu_model.ts";
import { ReferenceModel } from "../reference_model.ts";
import { fileListFiles } from "../source.ts";
import { tolerance } from "../verify.ts";
import { readHfCheckpoint, writeHfAsGguf } from "./convert.ts";
import type { GgufMix } from "./quant_mix.ts";
import { testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import { MODELS } from "../../../test/support/models.ts";

const FORTUNE = MODELS.find((m) => m.name === "fortune")!;
const LENGTHS = [1, 7, 8, 9, 255, 256, 257, 511, 512, 513, 2048];
const POSITIONS = 4096;

/** fortune as `mix` (undefined: its own safetensors folder), allowing `POSITIONS` positions. */
async function fortune(mix?: GgufMix): Promise<Checkpoint> {
  const dir = FORTUNE.dir.pathname;
  let ck: Checkpoint;
  if (mix === undefined) ck = await openCheckpoint(dirFiles(dir));
  else {
    const parts: Uint8Array[] = [];
    await writeHfAsGguf(await readHfCheckpoint(dirFiles(dir)), (b) => void parts.push(b.slice()), {
      name: "fortune",
      mix,
    });
    const file = new File(parts as BlobPart[], `fortune-${mix}.gguf`);
    ck = await openCheckpoint(fileListFiles([file]));
  }
  return { ...ck, config: { ...ck.config, maxPositionEmbeddings: POSITIONS } };
}

/** A deterministic prompt over fortune's vocabulary. */
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
 * Prefill `ids` in chunks of `chunk` tokens; the logits of the last chunk's first and last
 * positions (one row when they coincide).
 */
async function chunkedPrefill(
  fwd: Forward,
  ids: readonly number[],
  chunk: number,
  blockSize: number,
): Promise<{ positions: number[]; rows: Float32Array }> {
  const blockTable = Array.from({ length: Math.ceil(ids.length / blockSize) }, (_, i) => i);
  let rows: Float32Array = new Float32Array(0);
  let wanted: number[] = [];
  for (let start = 0; start < ids.length; start += chunk) {
    const end = Math.min(ids.length, start + chunk);
    const positions = Array.from({ length: end - start }, (_, i) => start + i);
    const last = end === ids.length;
    wanted = last ? [...new Set([start, end - 1])] : [];
    rows = await fwd.run({
      tokens: ids.slice(start, end),
      positions,
      slots: positions,
      tableOffsets: new Array(positions.length).fill(0),
      blockTable,
      logitRows: wanted.map((p) => p - start),
    });
  }
  return { positions: wanted, rows };
}

/** Each file, its chunk sizes, and the longest prompt it runs. */
const CASES: { mix?: GgufMix; chunks: number[]; upTo: number }[] = [
  { chunks: [256], upTo: 2048 },
  { mix: "q8_0", chunks: [256], upTo: 513 },
  { mix: "q4_0", chunks: [256], upTo: 513 },
  { mix: "q6_k", chunks: [256], upTo: 513 },
  { mix: "q4_k_m", chunks: [256, 7, 100], upTo: 2048 },
];

for (const { mix, chunks, upTo } of CASES) {
  Deno.test(`fortune ${mix ?? "F16"}: prompts past one prefill chunk match float64 (chunks ${chunks.join(", ")})`, async () => {
    const gpu = await testGpu();
    const ck = await fortune(mix);
    const V = ck.config.vocabSize;
    const lengths = LENGTHS.filter((l) => l <= upTo);
    const longest = promptIds(upTo, V);
    const ref = (await ReferenceModel.load(ck.config, ck.weights)).logits(longest);
    const tol = tolerance("f32");
    await withErrorScopes(gpu.device, async () => {
      const model = await GpuModel.fromCheckpoint(gpu, ck, {
        kvDtype: "f32",
        kvBlocks: POSITIONS / 16,
      });
      const fwd = new Forward(model);
      try {
        for (const chunk of chunks) {
          for (const length of lengths.filter((l) => chunk === 256 || l <= 513)) {
            const { positions, rows } = await chunkedPrefill(
              fwd,
              longest.slice(0, length),
              chunk,
              model.blockSize,
            );
            let maxErr = 0, refMax = 0, errSq = 0, refSq = 0, finite = true;
            positions.forEach((p, r) => {
              const want = ref[p]!;
              for (let v = 0; v < V; v++) {
                const e = rows[r * V + v]! - want[v]!;
                if (!Number.isFinite(e)) finite = false;
                maxErr = Math.max(maxErr, Math.abs(e));
                refMax = Math.max(refMax, Math.abs(want[v]!));
                errSq += e * e;
                refSq += want[v]! ** 2;
              }
            });
            const bound = tol.maxAbs * Math.max(1, refMax);
            const relL2 = Math.sqrt(errSq / refSq);
            const what = `${mix ?? "F16"} length ${length} chunk ${chunk}: max|err| ${
              maxErr.toExponential(2)
            } (bound ${bound.toExponential(2)}), rel_l2 ${relL2.toExponential(2)}`;
            ok(positions.length > 0 && rows.length === positions.length * V, what);
            ok(finite && maxErr <= bound && relL2 <= tol.relL2, what);
          }
        }
      } finally {
        fwd.destroy();
        model.destroy();
      }
    });
  });
}
