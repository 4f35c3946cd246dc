/**
 * `deno task quantize --model HF_DIR --type q8_0|q4_0|q4_k_m|q6_k --out FILE.gguf`: an HF
 * checkpoint folder as a quantized GGUF file llama.cpp loads (`src/convert/convert.ts`).
 * Prints the tensor types written, the file's size and the bits per weight. Exit 0 on success,
 * 2 on bad usage or a checkpoint that cannot be converted (the message says why).
 */
import { EngineError } from "../../contract/errors.ts";
import { type ConvertReport, readHfCheckpoint, writeHfAsGguf } from "../../convert/convert.ts";
import { GGUF_MIXES, type GgufMix } from "../../convert/quant_mix.ts";
import { dirFiles } from "./file_source.ts";
import { type CliSpec, type FlagTable, runCli } from "./flags.ts";
import { requireModelPath } from "./model_path.ts";

/**
 * Convert the checkpoint folder `dir` into `out` (quantized by `mix`, or in its own dtype
 * without one). The file is written under a temporary name and renamed when complete.
 */
export async function quantizeToFile(
  dir: string,
  out: string,
  mix?: GgufMix,
): Promise<ConvertReport> {
  const ck = await readHfCheckpoint(dirFiles(dir));
  const name = dir.split("/").filter(Boolean).pop() ?? "model";
  const tmp = `${out}.tmp${Deno.pid}`;
  const file = await Deno.open(tmp, { write: true, create: true, truncate: true });
  const writer = file.writable.getWriter(); // closing it closes the file
  try {
    const report = await writeHfAsGguf(
      ck,
      (b) => writer.write(b),
      mix === undefined ? { name } : { name, mix },
    );
    await writer.close();
    await Deno.rename(tmp, out);
    return report;
  } catch (e) {
    await writer.abort().catch(() => {});
    await Deno.remove(tmp).catch(() => {});
    throw e;
  }
}

/** The report as the lines the CLI prints. */
export function describeReport(out: string, r: ConvertReport): string[] {
  const types = Object.entries(r.types).map(([t, n]) => `${t}: ${n}`).join(", ");
  return [
    `wrote ${out}: ${r.bytes} bytes (${(r.bytes / 2 ** 20).toFixed(2)} MiB)`,
    `tensors: ${r.tensors.length} (${types})`,
    `${r.elements} weights at ${r.bitsPerWeight.toFixed(3)} bits per weight`,
    ...r.warnings.map((w) => `warning: ${w}`),
  ];
}

/** `deno task quantize`'s command line. */
const QUANTIZE = {
  name: "quantize",
  command: "deno task quantize",
  about: "An HF checkpoint folder as a quantized GGUF file llama.cpp loads. Exit 0 on success, 2 " +
    "on bad usage or a checkpoint that cannot be converted.",
  flags: {
    model: { type: "string", arg: "HF_DIR", required: true, help: "the checkpoint folder" },
    type: { type: "enum", choices: GGUF_MIXES, required: true, help: "the quantization mix" },
    out: { type: "string", arg: "FILE.gguf", required: true, help: "the GGUF file to write" },
  },
} as const satisfies CliSpec<FlagTable>;

if (import.meta.main) {
  const { flags, fail } = runCli(QUANTIZE);
  requireModelPath("quantize", flags.model);
  if (!flags.out.endsWith(".gguf")) {
    fail(`--out ${JSON.stringify(flags.out)}: expected a .gguf name`);
  }
  try {
    const report = await quantizeToFile(flags.model, flags.out, flags.type);
    for (const line of describeReport(flags.out, report)) console.log(line);
  } catch (e) {
    const err = EngineError.from(e);
    console.error(`quantize: ${err.type}: ${err.message}`);
    Deno.exit(2);
  }
}
