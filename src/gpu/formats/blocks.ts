/**
 * The geometry of every GGUF/ggml block-quantized type Kiln reads (each format file's
 * `<TYPE>_BLOCK`), with the lookups a GGUF header needs: by name or ggml number, and byte counts.
 * A quantized [rows, cols] matrix is stored row after row, each row `cols / blockSize` consecutive
 * blocks (so `cols` must be whole blocks). The codecs are `registry.ts`'s, which lists the same
 * types (its registry must have exactly these keys).
 */
import { EngineError } from "../../contract/errors.ts";
import type { QuantBlock } from "./format.ts";
import { IQ1_M_BLOCK } from "./iq1_m.ts";
import { IQ1_S_BLOCK } from "./iq1_s.ts";
import { IQ2_S_BLOCK } from "./iq2_s.ts";
import { IQ2_XS_BLOCK } from "./iq2_xs.ts";
import { IQ2_XXS_BLOCK } from "./iq2_xxs.ts";
import { IQ3_S_BLOCK } from "./iq3_s.ts";
import { IQ3_XXS_BLOCK } from "./iq3_xxs.ts";
import { IQ4_NL_BLOCK } from "./iq4_nl.ts";
import { IQ4_XS_BLOCK } from "./iq4_xs.ts";
import { MXFP4_BLOCK } from "./mxfp4.ts";
import { Q2_K_BLOCK } from "./q2_k.ts";
import { Q3_K_BLOCK } from "./q3_k.ts";
import { Q4_0_BLOCK } from "./q4_0.ts";
import { Q4_1_BLOCK } from "./q4_1.ts";
import { Q4_K_BLOCK } from "./q4_k.ts";
import { Q5_0_BLOCK } from "./q5_0.ts";
import { Q5_1_BLOCK } from "./q5_1.ts";
import { Q5_K_BLOCK } from "./q5_k.ts";
import { Q6_K_BLOCK } from "./q6_k.ts";
import { Q8_0_BLOCK } from "./q8_0.ts";
import { TQ1_0_BLOCK } from "./tq1_0.ts";
import { TQ2_0_BLOCK } from "./tq2_0.ts";

/** Every registered format's geometry by its `type` (the list `QuantType` is made from). */
export const QUANT_BLOCKS = {
  Q8_0: Q8_0_BLOCK,
  Q4_0: Q4_0_BLOCK,
  Q4_1: Q4_1_BLOCK,
  Q4_K: Q4_K_BLOCK,
  Q5_K: Q5_K_BLOCK,
  Q6_K: Q6_K_BLOCK,
  Q5_0: Q5_0_BLOCK,
  Q5_1: Q5_1_BLOCK,
  IQ4_NL: IQ4_NL_BLOCK,
  IQ4_XS: IQ4_XS_BLOCK,
  MXFP4: MXFP4_BLOCK,
  Q2_K: Q2_K_BLOCK,
  Q3_K: Q3_K_BLOCK,
  TQ1_0: TQ1_0_BLOCK,
  TQ2_0: TQ2_0_BLOCK,
  IQ2_XXS: IQ2_XXS_BLOCK,
  IQ2_XS: IQ2_XS_BLOCK,
  IQ2_S: IQ2_S_BLOCK,
  IQ3_XXS: IQ3_XXS_BLOCK,
  IQ3_S: IQ3_S_BLOCK,
  IQ1_S: IQ1_S_BLOCK,
  IQ1_M: IQ1_M_BLOCK,
} as const satisfies Record<string, QuantBlock>;

/** The GGUF/ggml block-quantized types Kiln reads. */
export type QuantType = keyof typeof QUANT_BLOCKS;

/** Every registered block type, in the registry's order. */
export const QUANT_TYPES = Object.keys(QUANT_BLOCKS) as QuantType[];

/** The geometry of `type`; an unknown type is an invalid argument. */
export function quantBlock(type: string): QuantBlock {
  if (!Object.hasOwn(QUANT_BLOCKS, type)) {
    throw EngineError.invalidArgument(
      `unknown quantization type ${JSON.stringify(type)} (known: ${QUANT_TYPES.join(", ")})`,
    );
  }
  return QUANT_BLOCKS[type as QuantType];
}

/** The supported type with ggml type number `ggmlType`. */
export function quantTypeOfGgml(ggmlType: number): QuantType {
  const found = QUANT_TYPES.find((t) => QUANT_BLOCKS[t].ggmlType === ggmlType);
  if (found === undefined) {
    throw EngineError.invalidArgument(
      `ggml type ${ggmlType} is not a supported quantized type (supported: ${
        QUANT_TYPES.join(", ")
      })`,
    );
  }
  return found;
}

/** Bytes of `count` elements of `type`; `count` must be whole blocks. */
export function quantizedBytes(type: string, count: number): number {
  const f = quantBlock(type);
  if (!Number.isInteger(count) || count < 0 || count % f.blockSize !== 0) {
    throw EngineError.invalidArgument(
      `${f.type}: ${count} elements is not a whole number of ${f.blockSize}-element blocks`,
    );
  }
  return (count / f.blockSize) * f.blockBytes;
}

/** Bytes of one row of `cols` elements; `cols` must be a multiple of the block size. */
export function quantizedRowBytes(type: string, cols: number): number {
  const f = quantBlock(type);
  if (!Number.isInteger(cols) || cols <= 0 || cols % f.blockSize !== 0) {
    throw EngineError.invalidArgument(
      `${f.type}: row length ${cols} is not a positive multiple of the block size ${f.blockSize}`,
    );
  }
  return (cols / f.blockSize) * f.blockBytes;
}
