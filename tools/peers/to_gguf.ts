/**
 * A safetensors checkpoint folder (Llama, Mistral or Qwen2; F16, F32 or BF16) as one GGUF v3
 * file llama.cpp loads, matrices in their own dtype: the library's converter
 * (`src/convert/convert.ts`; `deno task quantize` writes quantized ones).
 *
 *   deno run -A tools/peers/to_gguf.ts DIR OUT.gguf
 */
import { quantizeToFile } from "../../src/adapters/deno/quantize.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";

/** Convert the checkpoint in `dir` to a GGUF file at `out`. */
export async function toGguf(dir: string, out: string): Promise<void> {
  await quantizeToFile(dir, out);
}

if (import.meta.main) {
  const { args } = runCli({
    name: "to_gguf",
    command: "deno run -A tools/peers/to_gguf.ts",
    about: "A safetensors checkpoint folder as one GGUF file, matrices in their own dtype.",
    flags: {},
    args: {
      usage: "DIR OUT.gguf",
      min: 2,
      max: 2,
      help: "the checkpoint, the file to write",
    },
  });
  const [dir, out] = args as [string, string];
  await toGguf(dir, out);
  console.error(`wrote ${out}`);
}
