/**
 * GGUF/ggml block-quantized weight formats: the per-type block geometry, a float64 dequantizer
 * (the reference every quantized kernel is checked against) and a round-to-nearest quantizer
 * whose blocks decode the way ggml decodes them. A quantized [rows, cols] matrix is stored row
 * after row, each row `cols / blockSize` consecutive blocks (so `cols` must be whole blocks).
 * Block layouts: `legacy.ts` (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL) and `kquants.ts` (Q4_K, Q5_K, Q6_K).
 */
import { EngineError } from "../../contract/errors.ts";
import { type BlockCodec, IQ4_NL, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 } from "./legacy.ts";
import { Q4_K, Q5_K, Q6_K } from "./kquants.ts";

/** The GGUF/ggml block-quantized types Kiln reads. */
export type QuantType =
  | "Q8_0"
  | "Q4_0"
  | "Q4_1"
  | "Q4_K"
  | "Q5_K"
  | "Q6_K"
  | "Q5_0"
  | "Q5_1"
  | "IQ4_NL";

export interface QuantFormat {
  type: QuantType;
  /** ggml's `ggml_type` number, as GGUF tensor infos store it. */
  ggmlType: number;
  /** Elements per block. */
  blockSize: number;
  /** Bytes per block. */
  blockBytes: number;
  /** The value of the `FORMAT` override constant of `shaders/matvec_quant.wgsl`. */
  code: number;
}

const format = (
  type: QuantType,
  ggmlType: number,
  blockSize: number,
  blockBytes: number,
  code: number,
): QuantFormat => ({ type, ggmlType, blockSize, blockBytes, code });

export const QUANT_FORMATS: Readonly<Record<QuantType, QuantFormat>> = {
  Q8_0: format("Q8_0", 8, 32, 34, 0),
  Q4_0: format("Q4_0", 2, 32, 18, 1),
  Q4_1: format("Q4_1", 3, 32, 20, 2),
  Q4_K: format("Q4_K", 12, 256, 144, 3),
  Q5_K: format("Q5_K", 13, 256, 176, 4),
  Q6_K: format("Q6_K", 14, 256, 210, 5),
  Q5_0: format("Q5_0", 6, 32, 22, 6),
  Q5_1: format("Q5_1", 7, 32, 24, 7),
  IQ4_NL: format("IQ4_NL", 20, 32, 18, 8),
};

export const QUANT_TYPES = Object.keys(QUANT_FORMATS) as QuantType[];

const CODECS: Record<QuantType, BlockCodec> = {
  Q8_0,
  Q4_0,
  Q4_1,
  Q4_K,
  Q5_K,
  Q6_K,
  Q5_0,
  Q5_1,
  IQ4_NL,
};

/** The format of `type`; an unknown type is an invalid argument. */
export function quantFormat(type: string): QuantFormat {
  if (!Object.hasOwn(QUANT_FORMATS, type)) {
    throw EngineError.invalidArgument(
      `unknown quantization type ${JSON.stringify(type)} (known: ${QUANT_TYPES.join(", ")})`,
    );
  }
  return QUANT_FORMATS[type as QuantType];
}

/** The supported type with ggml type number `ggmlType`. */
export function quantTypeOfGgml(ggmlType: number): QuantType {
  const found = QUANT_TYPES.find((t) => QUANT_FORMATS[t].ggmlType === ggmlType);
  if (found === undefined) {
    throw EngineError.invalidArgument(`ggml type ${ggmlType} is not a supported quantized type`);
  }
  return found;
}

/** Bytes of `count` elements of `type`; `count` must be whole blocks. */
export function quantizedBytes(type: string, count: number): number {
  const f = quantFormat(type);
  if (!Number.isInteger(count) || count < 0 || count % f.blockSize !== 0) {
    throw EngineError.invalidArgument(
      `${f.type}: ${count} elements is not a whole number of ${f.blockSize}-element blocks`,
    );
  }
  return (count / f.blockSize) * f.blockBytes;
}

/** Bytes of one row of `cols` elements; `cols` must be a multiple of the block size. */
export function quantizedRowBytes(type: string, cols: number): number {
  const f = quantFormat(type);
  if (!Number.isInteger(cols) || cols <= 0 || cols % f.blockSize !== 0) {
    throw EngineError.invalidArgument(
      `${f.type}: row length ${cols} is not a positive multiple of the block size ${f.blockSize}`,
    );
  }
  return (cols / f.blockSize) * f.blockBytes;
}

/** The `count` elements that `bytes` (exactly count/blockSize blocks of `type`) encode, in float64. */
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
  const codec = CODECS[f.type];
  const out = new Float64Array(count);
  for (let b = 0; b < count / f.blockSize; b++) {
    codec.decode(bytes, b * f.blockBytes, out, b * f.blockSize);
  }
  return out;
}

/** Largest magnitude accepted by `quantize`: every block scale must fit an f16. */
export const QUANTIZE_MAX_ABS = 65504;

/**
 * Quantize a row-major [rows, cols] matrix to `type`, row after row, each row cols/blockSize
 * blocks. Round-to-nearest with a small scale search for the K-quants; not bit-identical to
 * llama.cpp's quantizer, but every block decodes the way ggml decodes it.
 */
export function quantize(
  type: string,
  values: Float32Array,
  rows: number,
  cols: number,
): Uint8Array {
  const f = quantFormat(type);
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
  const codec = CODECS[f.type];
  const out = new Uint8Array(rows * rowBytes);
  for (let b = 0; b < values.length / f.blockSize; b++) {
    codec.encode(values, b * f.blockSize, out, b * f.blockBytes);
  }
  return out;
}
