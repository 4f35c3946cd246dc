/**
 * The values of one weight tensor in float64, in HF order: safetensors F32/F16/BF16 decoded,
 * GGUF block-quantized types dequantized the way ggml does, and rows stored in another order
 * (`WeightInfo.rowOrder`: llama.cpp's interleaved q/k rows) put back in HF's order. What a float64 reference of a whole model reads.
 */
import { EngineError } from "../contract/errors.ts";
import { decodeWeights, DTYPE_BYTES, type WeightDtype } from "../gpu/dtype.ts";
import { dequantize } from "../gpu/formats/registry.ts";
import { loadQuantTables } from "../gpu/formats/tables.ts";
import type { WeightInfo } from "../model/weights.ts";

function isFloat(dtype: string): dtype is WeightDtype {
  return Object.hasOwn(DTYPE_BYTES, dtype);
}

/** The elements of `t` as float64, row-major `[rows, cols]` in HF order. */
export async function tensorValues(t: WeightInfo): Promise<Float64Array> {
  const count = t.shape.reduce((a, d) => a * d, 1);
  const bytes = await t.source.read(t.offset, t.length);
  if (bytes.byteLength !== t.length) {
    throw EngineError.invalidArgument(
      `tensor ${t.name}: read ${bytes.byteLength} bytes of ${t.length} from ${t.source.name}`,
    );
  }
  let values: Float64Array;
  if (isFloat(t.dtype)) {
    const need = count * DTYPE_BYTES[t.dtype];
    if (bytes.byteLength !== need) {
      throw EngineError.invalidArgument(
        `tensor ${t.name}: ${bytes.byteLength} bytes for [${t.shape}] of ${t.dtype} (expected ${need})`,
      );
    }
    values = decodeWeights(bytes, t.dtype);
  } else {
    await loadQuantTables([t.dtype]); // a tabled format's levels or grids, read once
    values = dequantize(t.dtype, bytes, count);
  }
  if (t.rowOrder === undefined) return values;
  const order = t.rowOrder();
  // HF row r is stored row order[r] (the reader's order: llama.cpp's q/k rows in GGUF).
  const rows = order.length;
  const cols = count / rows;
  if (!Number.isInteger(cols)) {
    throw EngineError.invalidArgument(`tensor ${t.name}: ${count} values in ${rows} rows`);
  }
  const out = new Float64Array(count);
  for (let r = 0; r < rows; r++) {
    const from = order[r]! * cols;
    out.set(values.subarray(from, from + cols), r * cols);
  }
  return out;
}
