/**
 * Writes `test/fixtures/ggml/<type>.json`: for each block type llama.cpp writes into GGUF files,
 * rows quantized by ggml's own quantizer (`ggml_quantize_chunk`, with a uniform importance matrix
 * for the types that need one) and the same rows dequantized by ggml's `dequantize_row_*`. The
 * committed files let CI check Kiln's decoders against ggml bit for bit without llama.cpp.
 *
 *   node_modules/.bin/deno run -A bench/peers/ggml_blocks.ts [TYPE...]   (default: all of them)
 *
 * Rows (ROWS x COLS): Gaussian values at magnitudes from 1e-3 to 30, a row with outliers, a row
 * of zeros and a row of one repeated value, from a fixed seed so reruns write the same files.
 */
import { runCli } from "../../src/adapters/deno/flags.ts";
import { openGgml } from "./ggml.ts";

/** The block types of GGUF files llama.cpp writes (ggml's names). */
export const GGML_FILE_TYPES = [
  "q4_0",
  "q4_1",
  "q5_0",
  "q5_1",
  "q8_0",
  "q2_K",
  "q3_K",
  "q4_K",
  "q5_K",
  "q6_K",
  "iq4_nl",
  "iq4_xs",
  "iq1_s",
  "iq1_m",
  "iq2_xxs",
  "iq2_xs",
  "iq2_s",
  "iq3_xxs",
  "iq3_s",
  "tq1_0",
  "tq2_0",
  "mxfp4",
] as const;

const ROWS = 8;
const COLS = 512;

function gaussianRows(seed: number): Float32Array {
  let s = seed >>> 0 || 1;
  const uniform = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return ((s >>> 0) + 0.5) / 2 ** 32;
  };
  const gauss = () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
  const out = new Float32Array(ROWS * COLS);
  const scales = [1e-3, 0.02, 0.1, 1, 30];
  for (let r = 0; r < ROWS; r++) {
    for (let c = 0; c < COLS; c++) {
      const i = r * COLS + c;
      if (r < scales.length) out[i] = gauss() * scales[r]!;
      else if (r === 5) {
        out[i] = gauss() * 0.05 + (c % 97 === 0 ? 4 * Math.sign(gauss()) : 0);
      } else if (r === 6) out[i] = 0;
      else out[i] = 0.37;
    }
  }
  return out;
}

if (import.meta.main) {
  const { args } = runCli({
    name: "ggml_blocks",
    command: "deno run -A bench/peers/ggml_blocks.ts",
    about: "Writes test/fixtures/ggml/<type>.json: rows quantized and dequantized by ggml itself.",
    flags: {},
    args: {
      usage: "[TYPE...]",
      min: 0,
      max: Infinity,
      help: "ggml type names (default: all)",
    },
  });
  const names = args.length > 0 ? args : [...GGML_FILE_TYPES];
  const ggml = await openGgml();
  const dir = new URL("../../test/fixtures/ggml/", import.meta.url);
  await Deno.mkdir(dir, { recursive: true });
  const values = gaussianRows(0x6b696c6e);
  const imatrix = new Float32Array(COLS).fill(1);
  for (const name of names) {
    const t = ggml.typeNamed(name);
    if (t === undefined) throw new Error(`ggml has no type ${name}`);
    const blocks = ggml.quantize(t, values, ROWS, COLS, imatrix);
    const decoded = ggml.dequantize(t, blocks, ROWS * COLS);
    const file = {
      type: t.name,
      ggml_type: t.id,
      block_size: t.blockSize,
      block_bytes: t.blockBytes,
      rows: ROWS,
      cols: COLS,
      blocks: blocks.toBase64(),
      values: new Uint8Array(decoded.buffer).toBase64(),
    };
    await Deno.writeTextFile(
      new URL(`${t.name}.json`, dir),
      JSON.stringify(file, null, 1) + "\n",
    );
    console.log(
      `${t.name}: type ${t.id}, ${blocks.byteLength} bytes of blocks`,
    );
  }
  ggml.close();
}
