/**
 * Gemma 2 on `test/fixtures/families/gemma2` (a tiny random checkpoint, its HF folder and the
 * logits llama.cpp computed on its GGUF): both formats load to one config and one set of weights
 * (HF norms `w` read as `1 + w`), Kiln's float64 reference agrees with llama.cpp (within the
 * 2.3e-3 that ggml's F16 GELU table costs it), each feature moves the logits when turned off
 * there, and the GPU forward (F32 and Q4_K_M, both kernel paths) matches the reference.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import {
  checkAblations,
  familyFixture,
  fixtureGpuTests,
  verifyOnGpu,
} from "../../../test/support/family_fixture.ts";
import { gemmaAblations, sameAsLlamaCpp } from "../../../test/support/gemma_checks.ts";
import { type Checkpoint, openCheckpoint } from "../checkpoint.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../convert/convert.ts";
import { fileListFiles } from "../../formats/source.ts";
import { tinyFamilyFiles } from "../../../test/support/tiny_family.ts";

const FIXTURE = familyFixture("gemma2");
const TOKENS = FIXTURE.manifest.tokens;
/** llama.cpp's GELU reads an F16 table: its logits are 2.3e-3 off an exact forward pass. */
const LLAMA_CPP_TOL = 5e-3;
const PROMPTS = [TOKENS, TOKENS.slice(0, 5), TOKENS.slice(7, 30)];

Deno.test("gemma2: HF and GGUF give one config and weights; float64 matches llama.cpp", async () => {
  const hf = await FIXTURE.hf(), gguf = await FIXTURE.gguf();
  const c = hf.config;
  deepStrictEqual(
    [c.arch, c.slidingWindow, c.slidingLayers, c.attnSoftcap, c.finalSoftcap, c.embedScale],
    ["gemma2", 8, [true, false], 2, 8, Math.sqrt(32)],
  );
  equal(c.attnScale, undefined, "query_pre_attn_scalar = head_dim: the default scale");
  await sameAsLlamaCpp(FIXTURE, hf, gguf, (w) => w.layers[1]!.mlpOutNorm!, LLAMA_CPP_TOL);
});

Deno.test("gemma2: each feature, turned off in the float64 reference, moves the logits", async () => {
  const ck = await FIXTURE.hf();
  const a = gemmaAblations(FIXTURE, ck);
  await checkAblations(FIXTURE, ck, {
    ...a.shared,
    "the attention soft-cap": () => a.without("attnSoftcap"),
    "the final soft-cap": () => a.without("finalSoftcap"),
  });
});

fixtureGpuTests("gemma2", FIXTURE, LLAMA_CPP_TOL, PROMPTS);

/**
 * A Gemma 2 the fixture does not cover: q/k/v biases, a query scale of its own
 * (query_pre_attn_scalar 24, head_dim 16) and rows of 256 so that Q4_K_M's K-quants (and GeGLU
 * in their epilogue) run; the window (6) shorter than a KV block.
 */
async function variant(): Promise<Checkpoint> {
  const shape = {
    hiddenSize: 256,
    intermediateSize: 256,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 16,
    vocabSize: 96,
    attentionBias: true,
    tieWordEmbeddings: true,
  };
  const { files, config } = tinyFamilyFiles({ arch: "gemma2", shape, std: 0.15 });
  const json = {
    ...config,
    hidden_activation: "gelu_pytorch_tanh",
    query_pre_attn_scalar: 24,
    sliding_window: 6,
    attn_logit_softcapping: 5,
    final_logit_softcapping: 10,
  };
  const hf = [new File([JSON.stringify(json)], "config.json"), files[1]!];
  const parts: Uint8Array[] = [];
  const report = await writeHfAsGguf(
    await readHfCheckpoint(fileListFiles(hf)),
    (b) => void parts.push(b.slice()),
    { mix: "q4_k_m" },
  );
  ok((report.types.Q4_K ?? 0) > 0, JSON.stringify(report.types));
  const ck = await openCheckpoint(fileListFiles([new File(parts as BlobPart[], "v.gguf")]));
  equal(Math.fround(ck.config.attnScale!), Math.fround(1 / Math.sqrt(24)), "f32 in the GGUF");
  ok(ck.weights.layers[0]!.qBias !== undefined);
  return ck;
}

for (const paths of ["cpu", "gpu"] as const) {
  Deno.test(`gemma2 with biases, its own query scale and K-quants on the GPU (${paths} paths)`, async () => {
    const prompts = [PROMPTS[2]!, TOKENS.slice(0, 3)].map((p) => p.map((t) => t % 96));
    await verifyOnGpu(await variant(), paths, prompts);
  });
}
