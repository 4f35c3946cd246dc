/**
 * A safetensors checkpoint folder (Llama, Mistral or Qwen2; F16, F32 or BF16) as one GGUF v3
 * file llama.cpp loads, matrices in their own dtype: the library's converter
 * (`src/model/gguf/convert.ts`; `deno task quantize` writes quantized ones).
 *
 *   deno run -A bench/peers/to_gguf.ts DIR OUT.gguf
 */
import { quantizeToFile } from "../../src/adapters/deno/quantize.ts";

/** Convert the checkpoint in `dir` to a GGUF file at `out`. */
export async function toGguf(dir: string, out: string): Promise<void> {
  await quantizeToFile(dir, out);
}

if (import.meta.main) {
  const [dir, out] = Deno.args;
  if (!dir || !out) {
    console.error("usage: deno run -A bench/peers/to_gguf.ts DIR OUT.gguf");
    Deno.exit(2);
  }
  await toGguf(dir, out);
  console.error(`wrote ${out}`);
}
