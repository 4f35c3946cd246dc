/**
 * Writes `test/fixtures/llamacpp/<model>/<ftype>.gguf` and `manifest.json`: the three HF
 * fixtures and fortune, converted to GGUF in their own dtype by Kiln's converter, then quantized
 * by llama.cpp itself (`llama_model_quantize`, `llama_lib.ts`) to each file type it makes without
 * an importance matrix. Ground truth for Kiln's GGUF loader and kernels: files as llama.cpp
 * writes them, its tensor type choices and fallbacks included.
 *
 *   node_modules/.bin/deno run -A bench/peers/llama_quantize.ts [--out DIR]
 *
 * The fixtures (hidden 64 to 96) get every file type; fortune's files are larger, so only
 * `FORTUNE_FTYPES` are kept, in that order, while everything stays under `BUDGET` bytes. The
 * imatrix file types are tried too and only recorded (refused, or made and not kept), but for
 * fortune's IQ3_S, which llama.cpp writes without an importance matrix.
 */
import { quantizeToFile } from "../../src/adapters/deno/quantize.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";
import { MODELS } from "../../test/support/models.ts";
import { openGgml } from "./ggml.ts";
import { type Ftype, FTYPES, IMATRIX_FTYPES, openLlamaQuantizer } from "./llama_lib.ts";
import {
  formatManifest,
  type LlamaCppFile,
  type Manifest,
  tensorTypes,
} from "../../test/support/llamacpp.ts";

/** Everything committed under the output folder stays below this many bytes. */
export const BUDGET = 16_500_000;

/** Fortune's file types in the order they are kept while the budget allows. */
export const FORTUNE_FTYPES: readonly Ftype[] = [
  "Q4_K_M",
  "Q2_K", // Q2_K and Q3_K
  "TQ1_0",
  "IQ4_XS",
  // An i-quant llama.cpp writes without an importance matrix: the one grid type it makes here.
  "IQ3_S",
];

async function sha256(bytes: Uint8Array): Promise<string> {
  return new Uint8Array(
    await crypto.subtle.digest("SHA-256", bytes as BufferSource),
  ).toHex();
}

/**
 * Whether two files differ in at most 4 bytes: the same tensors, types and data, only the
 * `general.file_type` value apart (a file type whose every choice fell back to another's).
 */
function sameTensors(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  let differ = 0;
  for (let i = 0; i < a.byteLength && differ <= 4; i++) {
    if (a[i] !== b[i]) differ++;
  }
  return differ <= 4;
}

if (import.meta.main) {
  const { flags } = runCli({
    name: "llama_quantize",
    command: "deno run -A bench/peers/llama_quantize.ts",
    about: "Writes test/fixtures/llamacpp/: the test models quantized by llama.cpp itself.",
    flags: {
      out: {
        type: "string",
        arg: "DIR",
        default: new URL("../../test/fixtures/llamacpp/", import.meta.url).pathname,
        help: "the folder to write (its manifest.json and one folder per model)",
      },
    },
  });
  const out = flags.out.endsWith("/") ? flags.out : `${flags.out}/`;
  const tmp = await Deno.makeTempDir({ prefix: "kiln-llamacpp-" });
  const ggml = await openGgml();
  const llama = await openLlamaQuantizer();
  const manifest: Manifest = {
    generated_by: "bench/peers/llama_quantize.ts",
    llama_cpp: llama.version,
    ggml_types: {},
    files: [],
    refused: [],
    not_kept: [],
  };
  let total = 0;
  try {
    for (const m of MODELS) {
      const input = `${tmp}/${m.name}.gguf`;
      await quantizeToFile(m.dir.pathname, input);
      const wanted = m.name === "fortune" ? FORTUNE_FTYPES : Object.keys(FTYPES) as Ftype[];
      const kept: { ftype: Ftype; bytes: Uint8Array }[] = [];
      // Wanted first (the budget goes to them in order), then the rest, then the imatrix types.
      const order = [
        ...wanted,
        ...(Object.keys(FTYPES) as Ftype[]).filter((f) => !wanted.includes(f)),
        ...(Object.keys(IMATRIX_FTYPES) as Ftype[]).filter((f) => !wanted.includes(f)),
      ];
      for (const ftype of order) {
        const file = `${tmp}/${m.name}-${ftype}.gguf`;
        const error = llama.quantize(input, file, ftype);
        if (error !== undefined) {
          manifest.refused.push({ model: m.name, ftype, error });
          console.log(`${m.name} ${ftype}: refused: ${error.split("\n")[0]}`);
          continue;
        }
        const bytes = await Deno.readFile(file);
        const tensors = await tensorTypes(bytes);
        for (const [, id] of tensors) {
          manifest.ggml_types[id] ??= ggml.type(id)?.name ?? `type ${id}`;
        }
        const entry: LlamaCppFile = {
          model: m.name,
          ftype,
          ftype_name: llama.ftypeName(ftype),
          file: `${m.name}/${ftype}.gguf`,
          bytes: bytes.byteLength,
          sha256: await sha256(bytes),
          tensor_types: {},
          tensors,
        };
        for (const [, id] of tensors) {
          const name = manifest.ggml_types[id]!;
          entry.tensor_types[name] = (entry.tensor_types[name] ?? 0) + 1;
        }
        const types = JSON.stringify(entry.tensor_types);
        const twin = kept.find((k) => sameTensors(k.bytes, bytes));
        const reason = !wanted.includes(ftype)
          ? ftype in IMATRIX_FTYPES ? "an imatrix file type" : "not in FORTUNE_FTYPES"
          : twin !== undefined
          ? `the file ${twin.ftype} with general.file_type changed`
          : total + bytes.byteLength > BUDGET
          ? "size budget"
          : undefined;
        if (reason !== undefined) {
          manifest.not_kept.push({
            model: m.name,
            ftype,
            bytes: bytes.byteLength,
            reason,
            types,
          });
          console.log(
            `${m.name} ${ftype}: ${bytes.byteLength} bytes ${types}, not kept (${reason})`,
          );
          continue;
        }
        total += bytes.byteLength;
        kept.push({ ftype, bytes });
        await Deno.mkdir(`${out}${m.name}`, { recursive: true });
        await Deno.writeFile(`${out}${entry.file}`, bytes);
        manifest.files.push(entry);
        console.log(`${m.name} ${ftype}: ${bytes.byteLength} bytes ${types}`);
      }
    }
  } finally {
    llama.close();
    ggml.close();
    await Deno.remove(tmp, { recursive: true });
  }
  const text = formatManifest(manifest);
  await Deno.writeTextFile(`${out}manifest.json`, text);
  console.log(
    `${manifest.files.length} files, ${total + text.length} bytes with the manifest`,
  );
  if (total + text.length > BUDGET) {
    throw new Error(`over the ${BUDGET}-byte budget`);
  }
}
