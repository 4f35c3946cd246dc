/**
 * llama.cpp (node-llama-cpp's CPU build) loads every GGUF `deno task quantize` writes: fortune
 * and the three reference fixtures at q8_0, q4_0, q6_k and q4_k_m, each greedily continuing a
 * fixed prompt of token ids for 8 tokens. The unquantized conversion (the checkpoint's own
 * dtype) is the baseline: its tokens must equal the fixture's HF reference where the reference
 * margin is clear, and each quantized file's agreement with it is printed. Dev-only (not in
 * `npm test`): needs bench/peers' packages and Node.
 *
 *   node_modules/.bin/deno test -A bench/peers/quantized_test.ts
 */
import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { quantizeToFile } from "../../src/adapters/deno/quantize.ts";
import { GGUF_MIXES, type GgufMix } from "../../src/model/gguf/quant_mix.ts";
import { llamaCppGreedy } from "./llama_cpp.ts";

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
    prompts: { input_ids: number[]; greedy_tokens: number[]; greedy_margins: number[] }[];
  };
  const p = ref.prompts[1]!;
  return {
    dir,
    prompt: p.input_ids,
    vocab,
    reference: { tokens: p.greedy_tokens.slice(0, N), margins: p.greedy_margins.slice(0, N) },
  };
}

/** Tokens equal up to the first step whose reference margin is under `tie`. */
function agreeUntilTie(got: number[], want: number[], margins: number[], tie: number): boolean {
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

async function run(name: string, c: Case): Promise<void> {
  const tmp = await Deno.makeTempDir();
  try {
    const baseFile = `${tmp}/source.gguf`;
    await quantizeToFile(c.dir, baseFile);
    const base = await llamaCppGreedy(baseFile, c.prompt, N);
    console.log(`${name} source dtype: ${JSON.stringify(base)}`);
    equal(base.length, N);
    if (c.reference) {
      const { tokens, margins } = c.reference;
      console.log(`${name} HF reference: ${JSON.stringify(tokens)}`);
      ok(agreeUntilTie(base, tokens, margins, 0.01), "unquantized llama.cpp matches HF");
    }
    for (const mix of GGUF_MIXES as readonly GgufMix[]) {
      const file = `${tmp}/${mix}.gguf`;
      const report = await quantizeToFile(c.dir, file, mix);
      const got = await llamaCppGreedy(file, c.prompt, N);
      const same = agreement(got, base);
      console.log(
        `${name} ${mix}: ${JSON.stringify(got)} (${same}/${N} agree with the source; ` +
          `${report.bytes} bytes, ${report.bitsPerWeight.toFixed(3)} bpw)`,
      );
      equal(got.length, N);
      ok(got.every((t) => Number.isInteger(t) && t >= 0 && t < c.vocab), "ids in the vocabulary");
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

for (const [name, vocab] of [["llama-gqa-f32", 260], ["qwen2-bias-tied-f16", 320], [
  "llama-mqa-bf16",
  512,
]] as const) {
  Deno.test({
    name: `${name}: llama.cpp loads each quantized GGUF and generates`,
    sanitizeResources,
    fn: async () => run(name, await fixture(name, vocab)),
  });
}
