/**
 * `deno task quantize --model HF_DIR --type q8_0|q4_0|q4_k_m|q6_k --out FILE.gguf`: an HF
 * checkpoint folder as a quantized GGUF file llama.cpp loads (`src/model/gguf/convert.ts`).
 * Prints the tensor types written, the file's size and the bits per weight. Exit 0 on success,
 * 2 on bad usage or a checkpoint that cannot be converted (the message says why).
 */
import { EngineError } from "../../contract/errors.ts";
import { type ConvertReport, readHfCheckpoint, writeHfAsGguf } from "../../model/gguf/convert.ts";
import { GGUF_MIXES, type GgufMix, parseMix } from "../../model/gguf/quant_mix.ts";
import { dirFiles } from "./file_source.ts";

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

interface Args {
  model: string;
  mix: GgufMix;
  out: string;
}

const USAGE = `usage: deno task quantize --model HF_DIR --type ${
  GGUF_MIXES.join("|")
} --out FILE.gguf`;

/** The CLI's arguments (`--name value` or `--name=value`); bad ones are an invalid argument. */
export function parseArgs(args: readonly string[]): Args {
  const got: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const m = /^--(model|type|out)(?:=(.*))?$/.exec(a);
    if (!m) throw EngineError.invalidArgument(`unknown argument ${JSON.stringify(a)}`);
    const value = m[2] ?? args[++i];
    if (value === undefined || value === "") {
      throw EngineError.invalidArgument(`--${m[1]} needs a value`);
    }
    got[m[1]!] = value;
  }
  for (const k of ["model", "type", "out"]) {
    if (got[k] === undefined) throw EngineError.invalidArgument(`--${k} is required`);
  }
  if (!got.out!.endsWith(".gguf")) {
    throw EngineError.invalidArgument(`--out ${JSON.stringify(got.out)}: expected a .gguf name`);
  }
  return { model: got.model!, mix: parseMix(got.type!), out: got.out! };
}

if (import.meta.main) {
  let args: Args;
  try {
    args = parseArgs(Deno.args);
  } catch (e) {
    console.error(`quantize: ${(e as Error).message}\n${USAGE}`);
    Deno.exit(2);
  }
  try {
    const report = await quantizeToFile(args.model, args.out, args.mix);
    for (const line of describeReport(args.out, report)) console.log(line);
  } catch (e) {
    const err = EngineError.from(e);
    console.error(`quantize: ${err.type}: ${err.message}`);
    Deno.exit(2);
  }
}
