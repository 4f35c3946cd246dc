/**
 * Correctness before speed: each peer's greedy tokens next to Kiln's, for a few prompts, on the
 * same checkpoint. Exits 1 if any available peer differs from Kiln at a step where Kiln's top-2
 * logit margin is clear (`--tie`, default twice the dtype's logit tolerance); a divergence at a
 * near tie is printed as TIE and does not fail.
 *
 *   deno run -A bench/peers/check.ts --model DIR [--tokens 24] [--peers llama.cpp,onnxruntime-web]
 *     [--onnx FILE] [--ort-f32] [--tie MARGIN]
 */
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { acquireGpu } from "../../src/gpu/device.ts";
import { GpuModel } from "../../src/runtime/gpu_model.ts";
import { type Greedy, kilnGreedy } from "../../tools/peers/kiln_greedy.ts";
import { peers } from "./mod.ts";
import { OrtWebGpuPeer } from "./ort_web.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";

const EXTRA = ["onnx-file", "onnxruntime-web-f32"];
const { flags } = runCli({
  name: "check",
  command: "deno run -A bench/peers/check.ts",
  about: "Each peer's greedy tokens next to Kiln's on the same checkpoint; exit 1 if one " +
    "differs where Kiln's top-2 margin is clear.",
  flags: {
    model: {
      type: "string",
      arg: "DIR",
      default: "models/fortune",
      help: "a checkpoint folder",
    },
    tokens: {
      type: "integer",
      min: 1,
      default: 24,
      help: "greedy tokens per prompt",
    },
    peers: {
      type: "list",
      choices: [...peers.map((p) => p.name), ...EXTRA],
      help: "only these peers (default: all)",
    },
    onnx: {
      type: "string",
      arg: "FILE",
      help: "also run this ONNX graph of the same weights",
    },
    "ort-f32": {
      type: "boolean",
      help: "also onnxruntime-web on an F32 export",
    },
    tie: {
      type: "number",
      min: 0,
      arg: "MARGIN",
      help: "a divergence below this top-2 margin is a TIE (default 2e-3 for f32, else 6e-2)",
    },
  },
});
const modelDir = flags.model;
const n = flags.tokens;
const only = flags.peers;
const onnx = flags.onnx;

/** A few prompts of different lengths: printable-ASCII byte ids (within any vocabulary over 127). */
function prompts(vocab: number): number[][] {
  const ids = (seed: number, len: number) =>
    Array.from(
      { length: len },
      (_, i) => (32 + (seed * 7919 + i * 104729) % 95) % vocab,
    );
  return [[1 % vocab], ids(1, 5), ids(2, 17), ids(3, 40)];
}

/** Kiln's greedy tokens on the checkpoint, with its top-2 margins. */
async function kilnOn(): Promise<
  { adapter: string; run: (p: number[]) => Promise<Greedy> }
> {
  const gpu = await acquireGpu({ label: "kiln-check" });
  const model = await GpuModel.load(gpu, dirFiles(modelDir), { kvBlocks: 16 });
  return { adapter: gpu.caps.adapter, run: (p) => kilnGreedy(model, p, n) };
}

const kiln = await kilnOn();
const config = JSON.parse(await Deno.readTextFile(`${modelDir}/config.json`));
const vocab = config.vocab_size as number;
// A divergence where Kiln's own top-2 margin is below twice the dtype's logit tolerance (as
// `verify` judges greedy steps) is a near tie that f16 rounding may flip, not a wrong result.
const f32 = (config.torch_dtype ?? config.dtype) === "float32";
const tie = flags.tie ?? (f32 ? 2e-3 : 6e-2);
const cases = prompts(vocab);
const expected: Greedy[] = [];
for (const p of cases) expected.push(await kiln.run(p));
console.log(
  `model ${modelDir}; Kiln on ${kiln.adapter}; ${n} greedy tokens per prompt`,
);

let failed = 0;
let ties = 0;
let checked = 0;
// --onnx FILE: also run a given ONNX graph of the same weights (e.g. a known-good export).
// --ort-f32: also onnxruntime-web on an F32 export (f32 arithmetic, like Kiln's).
const extra = [
  ...(onnx ? [new OrtWebGpuPeer("onnx-file", { onnxPath: onnx })] : []),
  ...(flags["ort-f32"] ? [new OrtWebGpuPeer("onnxruntime-web-f32", { dtype: "f32" })] : []),
];
for (const peer of [...peers, ...extra]) {
  if (only && !only.includes(peer.name)) continue;
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
      const k = want.tokens.findIndex((t, j) => got[j] !== t);
      const margin = k < 0 ? Infinity : want.margins[k]!;
      const verdict = k < 0 ? "same" : margin < tie ? "TIE " : "DIFF";
      const where = k < 0 ? "" : ` from step ${k} (Kiln's margin there ${margin.toFixed(4)})`;
      console.log(`${verdict} prompt ${i} (${p.length} ids)${where}`);
      console.log(`  ${"kiln".padEnd(16)} ${want.tokens.join(" ")}`);
      console.log(`  ${peer.name.padEnd(16)} ${got.join(" ")}`);
      if (verdict === "DIFF") failed++;
      if (verdict === "TIE ") ties++;
    }
  } finally {
    await peer.close();
  }
}
const note = ties > 0 ? `; ${ties} diverged at a near tie (margin < ${tie})` : "";
console.log(
  failed === 0 ? `check: PASS (${checked} peers${note})` : `check: FAIL (${failed} differ${note})`,
);
Deno.exit(failed === 0 ? 0 : 1);
