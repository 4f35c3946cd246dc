/**
 * The registry of the weight formats Kiln reads: the GGUF/ggml block-quantized ones and the float
 * ones (F32, F16, BF16, whose "block" is 32 consecutive elements), one file per format in this
 * folder (the contract is `format.ts`); the block types' geometry alone is `blocks.ts` (the type
 * system keeps the two lists the same). Everything below works off the registry: lookup by name
 * (`quantFormat`, `productFormat` for any dtype), float64 dequantization (the reference every quantized kernel is checked against) and
 * round-to-nearest quantization for the formats that have an encoder.
 */
import { EngineError } from "../../contract/errors.ts";
import { QUANT_TYPES, quantizedBytes, quantizedRowBytes, type QuantType } from "./blocks.ts";
import { isFloatDtype, type TensorDtype, type WeightDtype } from "../dtype.ts";
import type { QuantTable, WeightFormat } from "./format.ts";
import { BF16 } from "./bf16.ts";
import { F16 } from "./f16.ts";
import { F32 } from "./f32.ts";
import { IQ4_NL } from "./iq4_nl.ts";
import { IQ4_XS } from "./iq4_xs.ts";
import { MXFP4 } from "./mxfp4.ts";
import { Q2_K } from "./q2_k.ts";
import { Q3_K } from "./q3_k.ts";
import { IQ1_M } from "./iq1_m.ts";
import { IQ1_S } from "./iq1_s.ts";
import { IQ2_S } from "./iq2_s.ts";
import { IQ2_XS } from "./iq2_xs.ts";
import { IQ2_XXS } from "./iq2_xxs.ts";
import { IQ3_S } from "./iq3_s.ts";
import { IQ3_XXS } from "./iq3_xxs.ts";
import { Q4_0 } from "./q4_0.ts";
import { Q4_1 } from "./q4_1.ts";
import { Q4_K } from "./q4_k.ts";
import { Q5_0 } from "./q5_0.ts";
import { Q5_1 } from "./q5_1.ts";
import { Q5_K } from "./q5_k.ts";
import { Q6_K } from "./q6_k.ts";
import { Q8_0 } from "./q8_0.ts";
import { TQ1_0 } from "./tq1_0.ts";
import { TQ2_0 } from "./tq2_0.ts";

export type { QuantBlock, QuantTable, WeightFormat } from "./format.ts";
export {
  QUANT_BLOCKS,
  QUANT_TYPES,
  quantBlock,
  quantizedBytes,
  quantizedRowBytes,
  type QuantType,
  quantTypeOfGgml,
} from "./blocks.ts";

/** Every registered format by its `type` (each key is its format's `type`). */
const REGISTRY = {
  Q8_0,
  Q4_0,
  Q4_1,
  Q4_K,
  Q5_K,
  Q6_K,
  Q5_0,
  Q5_1,
  IQ4_NL,
  IQ4_XS,
  MXFP4,
  Q2_K,
  Q3_K,
  TQ1_0,
  TQ2_0,
  IQ2_XXS,
  IQ2_XS,
  IQ2_S,
  IQ3_XXS,
  IQ3_S,
  IQ1_S,
  IQ1_M,
} as const satisfies Record<QuantType, WeightFormat>;

export const QUANT_FORMATS: Readonly<Record<QuantType, WeightFormat>> = REGISTRY;

/** The format of `type`; an unknown type is an invalid argument. */
export function quantFormat(type: string): WeightFormat {
  if (!Object.hasOwn(QUANT_FORMATS, type)) {
    throw EngineError.invalidArgument(
      `unknown quantization type ${JSON.stringify(type)} (known: ${QUANT_TYPES.join(", ")})`,
    );
  }
  return QUANT_FORMATS[type as QuantType];
}

/** The float formats by dtype. */
export const FLOAT_FORMATS: Readonly<Record<WeightDtype, WeightFormat>> = {
  f32: F32,
  f16: F16,
  bf16: BF16,
};

/** The product format of a weight dtype, float or block-quantized. */
export function productFormat(dtype: TensorDtype): WeightFormat {
  return isFloatDtype(dtype) ? FLOAT_FORMATS[dtype] : quantFormat(dtype);
}

/**
 * Whether the product kernels take a weight of `dtype` with `k` columns: k a whole number of
 * the format's blocks (32 elements for floats). Float weights of other widths take the general
 * float GEMM (`product/float_gemm.wgsl`); block-quantized ones cannot have them.
 */
export function productTakes(dtype: TensorDtype, k: number): boolean {
  return Number.isInteger(k) && k >= 1 && k % productFormat(dtype).blockSize === 0;
}

/** Bytes of one weight row of `k` elements in format `f`; k must be a whole number of blocks. */
export function productRowBytes(f: WeightFormat, k: number): number {
  if (!(Number.isInteger(k) && k >= 1 && k % f.blockSize === 0)) {
    throw EngineError.invalidArgument(
      `${f.type}: row length ${k} is not a positive multiple of the block size ${f.blockSize}`,
    );
  }
  return (k / f.blockSize) * f.blockBytes;
}

/** The words of the tables loaded so far (`tables.ts` fills it), by table name. */
const tableWords = new Map<string, Uint32Array>();

/** Record the loaded words of `table` (called by `tables.ts`'s loader). */
export function provideQuantTable(table: QuantTable, words: Uint32Array): void {
  if (words.length !== table.words) {
    throw EngineError.invalidArgument(
      `table ${table.name}: ${words.length} words, the format expects ${table.words}`,
    );
  }
  tableWords.set(table.name, words);
}

/** The words of `f`'s table (undefined without one); a table not loaded yet is refused. */
function tableOf(f: WeightFormat): Uint32Array | undefined {
  if (f.table === undefined) return undefined;
  const words = tableWords.get(f.table.name);
  if (words === undefined) {
    throw EngineError.invalidArgument(
      `${f.type}: its table ${f.table.name} is not loaded (await loadQuantTables() first)`,
    );
  }
  return words;
}

/**
 * The `count` elements that `bytes` (exactly count/blockSize blocks of `type`) encode, in
 * float64. A format with a lookup table needs it loaded first (`loadQuantTables`).
 */
export function dequantize(type: string, bytes: Uint8Array, count: number): Float64Array {
  const f = quantFormat(type);
  const need = quantizedBytes(f.type, count);
  if (bytes.byteLength !== need) {
    throw EngineError.invalidArgument(
      `${f.type}: ${count} elements take ${need} bytes (${
        count / f.blockSize
      } blocks of ${f.blockBytes}), got ${bytes.byteLength}`,
    );
  }
  const table = tableOf(f);
  const out = new Float64Array(count);
  for (let b = 0; b < count / f.blockSize; b++) {
    f.decode(bytes, b * f.blockBytes, out, b * f.blockSize, table);
  }
  return out;
}

/** Largest magnitude accepted by `quantize`: every block scale must fit an f16. */
export const QUANTIZE_MAX_ABS = 65504;

/**
 * Quantize a row-major [rows, cols] matrix to `type`, row after row, each row cols/blockSize
 * blocks, with the format's `encode` (round-to-nearest, a small scale search for the K-quants;
 * not bit-identical to llama.cpp's quantizer, but every block decodes the way ggml decodes it).
 * A format without an encoder is an invalid argument.
 */
export function quantize(
  type: string,
  values: Float32Array,
  rows: number,
  cols: number,
): Uint8Array {
  const f = quantFormat(type);
  const encode = f.encode;
  if (encode === undefined) {
    throw EngineError.invalidArgument(`${f.type}: Kiln has no quantizer for this type`);
  }
  const rowBytes = quantizedRowBytes(f.type, cols);
  if (!Number.isInteger(rows) || rows < 0 || values.length !== rows * cols) {
    throw EngineError.invalidArgument(
      `${f.type}: ${values.length} values is not a [${rows}, ${cols}] matrix`,
    );
  }
  for (let i = 0; i < values.length; i++) {
    if (!(Math.abs(values[i]!) <= QUANTIZE_MAX_ABS)) {
      throw EngineError.invalidArgument(
        `${f.type}: value ${values[i]} at ${i} is not finite or exceeds ${QUANTIZE_MAX_ABS}`,
      );
    }
  }
  const out = new Uint8Array(rows * rowBytes);
  for (let b = 0; b < values.length / f.blockSize; b++) {
    encode.call(f, values, b * f.blockSize, out, b * f.blockBytes);
  }
  return out;
}
