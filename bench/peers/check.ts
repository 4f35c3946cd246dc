/**
 * Correctness before speed: each peer's greedy tokens next to Kiln's, for a few prompts, on the
 * same checkpoint. Exits 1 if any available peer differs from Kiln.
 *
 *   deno run -A bench/peers/check.ts --model DIR [--tokens 24] [--peers llama.cpp,onnxruntime-web]
 *     [--onnx FILE]
 */
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { acquireGpu } from "../../src/gpu/device.ts";
import { generateTokens } from "../../src/model/generate.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import { peers } from "./mod.ts";
import { OrtWebGpuPeer } from "./ort_web.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] ?? fallback : fallback;
};
const modelDir = arg("model", "models/fortune");
const n = Number(arg("tokens", "24"));
const only = arg("peers", "");
const onnx = arg("onnx", "");

/** A few prompts of different lengths, inside any vocabulary of 260 or more ids. */
function prompts(vocab: number): number[][] {
  const ids = (seed: number, len: number) =>
    Array.from(
      { length: len },
      (_, i) => (seed * 7919 + i * 104729) % Math.min(vocab, 256),
    );
  return [[1 % vocab], ids(1, 5), ids(2, 17), ids(3, 40)];
}

async function kilnGreedy(): Promise<
  { adapter: string; run: (p: number[]) => Promise<number[]> }
> {
  const gpu = await acquireGpu({ label: "kiln-check" });
  const model = await GpuModel.load(gpu, dirFiles(modelDir), { kvBlocks: 16 });
  const run = async (prompt: number[]) => {
    const out: number[] = [];
    for await (
      const { token } of generateTokens(model, prompt, {
        maxTokens: n,
        temperature: 0,
      })
    ) {
      out.push(token);
    }
    return out;
  };
  return { adapter: gpu.caps.adapter, run };
}

const kiln = await kilnGreedy();
const vocab = JSON.parse(await Deno.readTextFile(`${modelDir}/config.json`))
  .vocab_size as number;
const cases = prompts(vocab);
const expected: number[][] = [];
for (const p of cases) expected.push(await kiln.run(p));
console.log(
  `model ${modelDir}; Kiln on ${kiln.adapter}; ${n} greedy tokens per prompt`,
);

let failed = 0;
let checked = 0;
// --onnx FILE: also run a given ONNX graph of the same weights (e.g. a known-good export).
const extra = onnx ? [new OrtWebGpuPeer("onnx-file", onnx)] : [];
for (const peer of [...peers, ...extra]) {
  if (only && !only.split(",").includes(peer.name)) continue;
  const why = await peer.setup(modelDir);
  if (why !== undefined) {
    console.log(`${peer.name}: skipped (${why})`);
    continue;
  }
  checked++;
  try {
    for (const [i, p] of cases.entries()) {
      const got = await peer.greedy(p, n);
      const want = expected[i]!;
      const same = got.length === want.length &&
        got.every((t, j) => t === want[j]);
      const first = want.findIndex((t, j) => got[j] !== t);
      console.log(
        `${same ? "same" : "DIFF"} prompt ${i} (${p.length} ids)${
          same ? "" : ` from step ${first}`
        }`,
      );
      console.log(`  kiln       ${want.join(" ")}`);
      console.log(`  ${peer.name.padEnd(10)} ${got.join(" ")}`);
      if (!same) failed++;
    }
  } finally {
    await peer.close();
  }
}
console.log(
  failed === 0
    ? `check: PASS (${checked} peers)`
    : `check: FAIL (${failed} differ)`,
);
Deno.exit(failed === 0 ? 0 : 1);
