/**
 * Ground-truth fixtures for Kiln's model families, computed by llama.cpp (node-llama-cpp's CPU
 * build), not by Kiln: for each family a tiny random-weight checkpoint (F32 GGUF written with
 * Kiln's GGUF writer, plus the same weights as an HF folder), llama.cpp's teacher-forced logits
 * at every position of a fixed token sequence, and proof that each structural feature matters:
 * every ablation (the feature turned off in a variant of the file) must move llama.cpp's logits
 * by at least `--min-delta` (max |delta| over all positions and tokens), or nothing is written
 * for that family and the script exits 1.
 *
 *   deno run -A bench/peers/family_checkpoints.ts [--only qwen3,gemma2] [--out DIR]
 *
 * Writes DIR/<family>/{model.gguf, logits.f32, manifest.json, hf/config.json,
 * hf/model.safetensors} (DIR: test/fixtures/families). See that folder's README.
 */
import { runCli } from "../../src/adapters/deno/flags.ts";
import { encodeSafetensors, encodeVariant, type Variant } from "./families/build.ts";
import { DIMS, type Family } from "./families/common.ts";
import { gemma2, gemma3, phi3, qwen3, smollm3 } from "./families/dense.ts";
import { gptOss } from "./families/gptoss.ts";
import { granite, llama3, olmo2, olmo3, qwen3moe } from "./families/more.ts";
import { referenceLogits } from "./families/reference.ts";
import { llamaCppLogitsEach } from "./llama_cpp.ts";
import { openLlamaQuantizer } from "./llama_lib.ts";

export const FAMILIES: Record<string, () => Family> = {
  qwen3,
  gemma2,
  gemma3,
  phi3,
  smollm3,
  olmo2,
  olmo3,
  granite,
  qwen3moe,
  llama3,
  "gpt-oss": gptOss,
};

/** The text whose bytes (id = byte + 3) follow BOS: 50 tokens, past every window of 8. */
export const TEXT = "The kiln fires clay at 1200 degrees; glazes melt.";

export function fixtureTokens(): number[] {
  return [1, ...new TextEncoder().encode(TEXT)].map((b, i) => i === 0 ? b : b + 3);
}

function maxAbsDelta(a: number[][], b: number[][]): number {
  let m = 0;
  for (let p = 0; p < a.length; p++) {
    for (let t = 0; t < a[p]!.length; t++) {
      m = Math.max(m, Math.abs(a[p]![t]! - b[p]![t]!));
    }
  }
  return m;
}

async function sha256(bytes: Uint8Array): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new Uint8Array(bytes));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

export async function llamaCppVersion(): Promise<string> {
  const base = new URL("./node_modules/node-llama-cpp/", import.meta.url);
  const pkg = JSON.parse(
    await Deno.readTextFile(new URL("package.json", base)),
  );
  const info = JSON.parse(
    await Deno.readTextFile(new URL("llama/llama.cpp.info.json", base)),
  );
  return `node-llama-cpp ${pkg.version}, llama.cpp ${info.tag} (CPU build)`;
}

export interface Result {
  family: Family;
  files: Record<string, Uint8Array>;
  manifest: Record<string, unknown>;
  failed: string[];
}

/** Build one family, run llama.cpp on it and on every ablation, and check the deltas. */
export async function buildFamily(
  family: Family,
  minDelta: number,
  version: string,
): Promise<Result> {
  const tokens = fixtureTokens();
  const variants: Variant[] = [family.gguf];
  const pairs = family.ablations.map((a) => {
    const v = variants.push(a.variant(family.gguf)) - 1;
    const b = a.base ? variants.push(a.base.variant(family.gguf)) - 1 : 0;
    return [v, b] as const;
  });
  const tmp = await Deno.makeTempDir({ prefix: `kiln-family-${family.name}-` });
  try {
    const paths: string[] = [];
    const bytes: Uint8Array[] = [];
    for (const [i, v] of variants.entries()) {
      // Not the family's name: llama.cpp special-cases vocabularies by general.name (a name
      // containing "phi3" makes it look up an <|endoftext|> token this vocabulary lacks).
      bytes.push(await encodeVariant(v, "kiln-tiny-fixture"));
      paths.push(`${tmp}/${i}.gguf`);
      await Deno.writeFile(paths[i]!, bytes[i]!);
    }
    // llama.cpp's own quantization of the main file, run after the variants.
    const quantized = family.quantize && `${tmp}/quantized.gguf`;
    if (quantized) {
      const q = await openLlamaQuantizer();
      try {
        const error = q.quantize(paths[0]!, quantized, family.quantize!);
        if (error) {
          throw new Error(`${family.name}: llama_model_quantize: ${error}`);
        }
      } finally {
        q.close();
      }
    }
    const logits = await llamaCppLogitsEach(
      quantized ? [...paths, quantized] : paths,
      tokens,
      DIMS.vocab,
      { f32: true },
    );
    const quantLogits = quantized ? logits.pop()! : undefined;
    const main = logits[0]!;
    if (!main.every((row) => row.every(Number.isFinite))) {
      throw new Error(`${family.name}: llama.cpp's logits are not all finite`);
    }
    const ablations = family.ablations.map((a, i) => ({
      feature: a.feature,
      how: a.how,
      against: a.base?.what ?? "model.gguf",
      max_abs_delta: Number(
        maxAbsDelta(logits[pairs[i]![0]]!, logits[pairs[i]![1]]!).toPrecision(
          6,
        ),
      ),
    }));
    const reference = referenceLogits(family.hfConfig, (name) => {
      const t = family.hf.get(name) ?? family.hfBytes?.get(name);
      if (!t) throw new Error(`${family.name}: the reference wants ${name}`);
      return Float64Array.from(t.data);
    }, tokens);
    const refError = maxAbsDelta(main, reference.map((row) => [...row]));
    const failed = ablations.filter((a) => !(a.max_abs_delta >= minDelta)).map((
      a,
    ) => a.feature);
    const flat = Float32Array.from(main.flat());
    const logitBytes = new Uint8Array(flat.buffer);
    const config = new TextEncoder().encode(
      JSON.stringify(family.hfConfig, null, 2) + "\n",
    );
    const files: Record<string, Uint8Array> = {
      "model.gguf": bytes[0]!,
      "logits.f32": logitBytes,
      "hf/config.json": config,
      "hf/model.safetensors": encodeSafetensors(family.hf, family.hfBytes),
    };
    let quantManifest: Record<string, unknown> | undefined;
    if (quantized && quantLogits) {
      const name = `model.${family.quantize!.toLowerCase()}.gguf`;
      const logitName = `logits.${family.quantize!.toLowerCase()}.f32`;
      files[name] = await Deno.readFile(quantized);
      files[logitName] = new Uint8Array(
        Float32Array.from(quantLogits.flat()).buffer,
      );
      const argmax = (r: number[]) => r.indexOf(Math.max(...r));
      quantManifest = {
        file: name,
        logits: logitName,
        made_by: `llama_model_quantize(model.gguf, ftype ${family.quantize}), llama.cpp's own`,
        max_abs_delta_vs_f32: Number(
          maxAbsDelta(quantLogits, main).toPrecision(6),
        ),
        argmax_agreement_vs_f32: quantLogits.filter((r, p) => argmax(r) === argmax(main[p]!))
          .length,
      };
    }
    const listed: Record<string, { bytes: number; sha256: string }> = {};
    for (const [name, b] of Object.entries(files)) {
      listed[name] = { bytes: b.length, sha256: await sha256(b) };
    }
    let maxAbs = 0;
    for (const v of flat) maxAbs = Math.max(maxAbs, Math.abs(v));
    const manifest = {
      family: family.name,
      architecture: family.gguf.arch,
      produced_by: "bench/peers/family_checkpoints.ts",
      llama_cpp: version,
      dims: {
        ...DIMS,
        headDim: family.hfConfig.head_dim ?? DIMS.headDim,
        layers: family.hfConfig.num_hidden_layers,
      },
      features: family.features,
      text: TEXT,
      tokens,
      logits: {
        file: "logits.f32",
        dtype: "float32 little-endian",
        shape: [tokens.length, DIMS.vocab],
        meaning: "row p: llama.cpp's raw next-token logits after tokens[0..p] (teacher-forced, " +
          "one batch, CPU, F32 KV cache, no flash attention), indexed by token id",
        max_abs: Number(maxAbs.toPrecision(6)),
      },
      ablations,
      ...(quantManifest ? { quantized: quantManifest } : {}),
      min_delta: minDelta,
      float64_reference: {
        max_abs_error: Number(refError.toPrecision(3)),
        meaning:
          "max |logits.f32 - a float64 forward of hf/ (bench/peers/families/reference.ts)|; " +
          "Gemma's is larger: llama.cpp's CPU GELU reads an F16 table",
      },
      files: listed,
      hf_conventions: family.conventions,
      tensor_map: family.map,
    };
    return { family, files, manifest, failed };
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

async function writeFixture(out: string, r: Result): Promise<number> {
  const dir = `${out}/${r.family.name}`;
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  await Deno.mkdir(`${dir}/hf`, { recursive: true });
  let total = 0;
  for (const [name, b] of Object.entries(r.files)) {
    await Deno.writeFile(`${dir}/${name}`, b);
    total += b.length;
  }
  // Indented, but each array of numbers on one line.
  const json = JSON.stringify(r.manifest, null, 2).replace(
    /\[\s+(-?[\d.e+-]+(?:,\s+-?[\d.e+-]+)*)\s+\]/g,
    (_, items: string) => `[${items.replace(/,\s+/g, ", ")}]`,
  );
  const manifest = new TextEncoder().encode(json + "\n");
  await Deno.writeFile(`${dir}/manifest.json`, manifest);
  return total + manifest.length;
}

/**
 * `out/index.json`: every family folder in `out` (with a manifest), sorted, for pages that
 * cannot list a folder (the Chromium families check).
 */
async function writeIndex(out: string): Promise<void> {
  const families: string[] = [];
  for await (const e of Deno.readDir(out)) {
    const has = await Deno.stat(`${out}/${e.name}/manifest.json`).then(() => true, () => false);
    if (e.isDirectory && has) families.push(e.name);
  }
  const text = JSON.stringify({
    source: "bench/peers/family_checkpoints.ts",
    families: families.sort(),
  });
  await Deno.writeTextFile(`${out}/index.json`, text + "\n");
}

if (import.meta.main) {
  const { flags } = runCli({
    name: "family_checkpoints",
    command: "deno run -A bench/peers/family_checkpoints.ts",
    about: "Tiny random checkpoints per model family with llama.cpp's logits and ablations.",
    flags: {
      only: {
        type: "list",
        choices: Object.keys(FAMILIES),
        default: Object.keys(FAMILIES),
        help: "families to build",
      },
      out: {
        type: "string",
        default: "test/fixtures/families",
        help: "the folder to write",
      },
      "min-delta": {
        type: "number",
        min: 0,
        default: 0.1,
        help: "the least max |delta| each ablation must cause",
      },
    },
  });
  const version = await llamaCppVersion();
  let bad = 0;
  for (const name of flags.only) {
    const r = await buildFamily(FAMILIES[name]!(), flags["min-delta"], version);
    const deltas = (r.manifest.ablations as { feature: string; max_abs_delta: number }[])
      .map((a) => `${a.feature} ${a.max_abs_delta}`).join(", ");
    if (r.failed.length) {
      bad++;
      console.error(
        `${name}: NOT written, ablations under the minimum: ${r.failed} (${deltas})`,
      );
      continue;
    }
    const size = await writeFixture(flags.out, r);
    const max = (r.manifest.logits as { max_abs: number }).max_abs;
    const ref = (r.manifest.float64_reference as { max_abs_error: number }).max_abs_error;
    console.error(`${name}: ${size} bytes, max |logit| ${max}, float64 error ${ref}; ${deltas}`);
  }
  await writeIndex(flags.out);
  if (bad) Deno.exit(1);
}
