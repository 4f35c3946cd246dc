/**
 * The Phi-3 LongRoPE fixture (`test/fixtures/rope/phi3_longrope`), computed by llama.cpp
 * (node-llama-cpp's CPU build): the phi3 family fixture's weights laid out as llama.cpp's
 * converter writes a Phi-3 128k model (`context_length` 4096 over an original context of 512:
 * `rope.scaling.original_context_length`, `attn_factor` sqrt(1 + ln 8 / ln 512), and the
 * `rope_factors_short` / `rope_factors_long` tensors), written to a GGUF by Kiln's writer (which
 * copies the factors as given), and llama.cpp's teacher-forced logits for the first 32 fixture
 * tokens in a context of 256 (below the original: llama.cpp applies the short factors) and of
 * 1024 (above it: the long ones). Refuses to write unless the two contexts' logits differ by at
 * least 0.1 (the choice shows).
 *
 *   deno run -A bench/peers/phi3_longrope.ts [--out DIR]
 *
 * Writes DIR/{model.gguf, logits_256.f32, logits_1024.f32, manifest.json}.
 */
import { runCli } from "../../src/adapters/deno/flags.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../src/convert/convert.ts";
import { fileListFiles } from "../../src/formats/source.ts";
import { fixtureTokens } from "./family_checkpoints.ts";
import { llamaCppLogitsEach } from "./llama_cpp.ts";

const FAMILY = new URL("../../test/fixtures/families/phi3/hf/", import.meta.url).pathname;
const { flags } = runCli({
  name: "phi3_longrope",
  command: "deno run -A bench/peers/phi3_longrope.ts",
  about:
    "The Phi-3 LongRoPE fixture: a GGUF and llama.cpp's logits below and above its original context.",
  flags: {
    out: {
      type: "string",
      default: new URL("../../test/fixtures/rope/phi3_longrope/", import.meta.url).pathname,
      help: "the folder to write",
    },
  },
});
const OUT = flags.out;

/** The HF keys laid over the phi3 fixture's config (2 factors each for its 4 rotated dims). */
export const LONGROPE_OVERLAY = {
  max_position_embeddings: 4096,
  original_max_position_embeddings: 512,
  rope_scaling: {
    type: "longrope",
    short_factor: [1, 1.7],
    long_factor: [2.5, 9],
  },
};
const CONTEXTS = [256, 1024];
const TOKENS = fixtureTokens().slice(0, 32);
const VOCAB = 259;

const config = {
  ...JSON.parse(await Deno.readTextFile(`${FAMILY}config.json`)),
  ...LONGROPE_OVERLAY,
};
const parts: Uint8Array[] = [];
// Not the family's name: llama.cpp special-cases vocabularies named like phi3.
await writeHfAsGguf(
  await readHfCheckpoint(fileListFiles([
    new File([JSON.stringify(config)], "config.json"),
    new File(
      [await Deno.readFile(`${FAMILY}model.safetensors`)],
      "model.safetensors",
    ),
  ])),
  (b) => void parts.push(b.slice()),
  { name: "kiln-tiny-fixture" },
);
const gguf = new Uint8Array(await new Blob(parts as BlobPart[]).arrayBuffer());
const tmp = await Deno.makeTempFile({ suffix: ".gguf" });
const logits: number[][][] = [];
try {
  await Deno.writeFile(tmp, gguf);
  for (const contextSize of CONTEXTS) {
    const [rows] = await llamaCppLogitsEach([tmp], TOKENS, VOCAB, {
      f32: true,
      contextSize,
    });
    logits.push(rows!);
  }
} finally {
  await Deno.remove(tmp);
}
let delta = 0;
logits[0]!.forEach((row, p) =>
  row.forEach((v, t) => delta = Math.max(delta, Math.abs(v - logits[1]![p]![t]!)))
);
console.log(`max |logits(256) - logits(1024)| = ${delta}`);
if (!(delta >= 0.1)) {
  console.error(
    "the context does not move llama.cpp's logits: nothing written",
  );
  Deno.exit(1);
}
await Deno.mkdir(OUT, { recursive: true });
await Deno.writeFile(`${OUT}/model.gguf`, gguf);
for (const [i, c] of CONTEXTS.entries()) {
  await Deno.writeFile(
    `${OUT}/logits_${c}.f32`,
    new Uint8Array(Float32Array.from(logits[i]!.flat()).buffer),
  );
}
const manifest = {
  family: "phi3",
  produced_by: "bench/peers/phi3_longrope.ts",
  llama_cpp: "node-llama-cpp 3.22.1 (CPU build)",
  hf_overlay: LONGROPE_OVERLAY,
  tokens: TOKENS,
  vocab: VOCAB,
  runs: CONTEXTS.map((c) => ({
    context: c,
    factors: c > LONGROPE_OVERLAY.original_max_position_embeddings ? "long" : "short",
    file: `logits_${c}.f32`,
    shape: [TOKENS.length, VOCAB],
  })),
  meaning: "row p: llama.cpp's raw next-token logits after tokens[0..p] (teacher-forced, one " +
    "batch, CPU, F32 KV cache, no flash attention) in a context of `context` tokens, indexed " +
    "by token id; float32 little-endian",
  max_abs_delta_between_contexts: Number(delta.toPrecision(6)),
};
await Deno.writeTextFile(
  `${OUT}/manifest.json`,
  JSON.stringify(manifest, null, 2) + "\n",
);
console.log(`wrote ${OUT}`);
