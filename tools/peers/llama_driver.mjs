// node-llama-cpp in a Node process, driven over JSON lines: one request per stdin line, one
// reply per stdout line ({ ok: ... } or { error }). It runs in Node, not in Deno, because
// node-llama-cpp's native addon and its backend probing are built for Node.
//
//   {"op":"setup","model":"x.gguf","gpu":"vulkan"|false}  -> {"ok":{"device":"...",...}}
//   {"op":"greedy","ids":[...],"n":N}                     -> {"ok":{"tokens":[...]}}
//   {"op":"decode","ids":[...],"n":N,"batch":B}           -> {"ok":{"tokens":T,"seconds":S}}
//   {"op":"prefill","ids":[...]}                          -> {"ok":{"seconds":S}}
// greedy, decode and prefill take an optional "threads":N, the context's CPU thread count
// (exactly N: the backend is started without node-llama-cpp's thread cap).
//   {"op":"tokenize","text":"..."}                        -> {"ok":{"tokens":[...]}} (no BOS)
//   {"op":"logits","ids":[...],"vocab":V}                 -> {"ok":{"logits":[[...V], ...]}}
// logits takes an optional "f32":true: an F32 KV cache and no flash attention (default: F16 cache).
//   {"op":"close"}                                        -> {"ok":true}, then exit
import { createInterface } from "node:readline";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

let llama;
let model;

// A second setup loads another model (the backend is kept; the old model is disposed).
async function setup({ model: path, gpu }) {
  await model?.dispose();
  model = undefined;
  llama ??= await getLlama({
    gpu: gpu === false ? false : gpu,
    build: "never",
    usePrebuiltBinaries: true,
    logLevel: LlamaLogLevel.error,
    progressLogs: false,
    // No cap: a context's `threads` is then the count it uses (node-llama-cpp otherwise caps a
    // CPU backend at max(math cores, 4) and treats `threads` as a hint).
    maxThreads: 0,
  });
  if (gpu !== false && llama.gpu !== gpu) {
    throw new Error(`backend ${gpu} not available`);
  }
  model = await llama.loadModel({
    modelPath: path,
    gpuLayers: gpu === false ? 0 : "max",
  });
  const names = gpu === false ? [] : await llama.getGpuDeviceNames();
  return {
    device: gpu === false ? "cpu" : names.join(", "),
    backend: llama.gpu || "cpu",
    cpu_math_cores: llama.cpuMathCores,
  };
}

/**
 * A fresh context holding `sequences` sequences of up to `tokens` tokens each, on `threads` CPU
 * threads (undefined: node-llama-cpp's default).
 */
function context(tokens, sequences, threads, extra = {}) {
  const contextSize = Math.ceil((tokens + 16) / 256) * 256 * sequences;
  return model.createContext({
    contextSize,
    sequences,
    batchSize: Math.max(512, sequences),
    ...(threads === undefined ? {} : { threads }),
    ...extra,
  });
}

/**
 * An F32 KV cache (the default F16 one rounds K and V) and the plain attention path, not flash
 * attention (on the CPU it converts Q to the cache's type): a float32 forward.
 */
const F32_CONTEXT = {
  flashAttention: false,
  experimentalKvCacheKeyType: "F32",
  experimentalKvCacheValueType: "F32",
};

/** Generate n tokens greedily after ids; onToken sees each token as it arrives. */
async function generate(seq, ids, n, onToken) {
  const out = [];
  if (n <= 0) return out;
  for await (
    const t of seq.evaluate(ids, { temperature: 0, yieldEogToken: true })
  ) {
    out.push(t);
    onToken?.();
    if (out.length >= n) break;
  }
  return out;
}

async function greedy({ ids, n, threads }) {
  const ctx = await context(ids.length + n, 1, threads);
  try {
    return { tokens: await generate(ctx.getSequence(), ids, n) };
  } finally {
    await ctx.dispose();
  }
}

async function decode({ ids, n, batch, threads }) {
  const ctx = await context(ids.length + n, batch, threads);
  try {
    const seqs = Array.from({ length: batch }, () => ctx.getSequence());
    let first = Infinity;
    let last = 0;
    const stamp = () => {
      const now = performance.now();
      if (first === Infinity) first = now;
      last = now;
    };
    const outs = await Promise.all(seqs.map((s) => generate(s, ids, n, stamp)));
    // Each stream's first token comes out of prefill, before the timed window.
    const tokens = outs.reduce((a, o) => a + Math.max(0, o.length - 1), 0);
    return { tokens, seconds: (last - first) / 1000 };
  } finally {
    await ctx.dispose();
  }
}

async function prefill({ ids, threads }) {
  const ctx = await context(ids.length, 1, threads);
  try {
    const seq = ctx.getSequence();
    const t0 = performance.now();
    await seq.evaluateWithoutGeneratingNewTokens(ids);
    return { seconds: (performance.now() - t0) / 1000 };
  } finally {
    await ctx.dispose();
  }
}

/**
 * Teacher-forced logits: the raw next-token logits llama.cpp computes after each prefix of `ids`
 * (one row per position, the whole vocabulary, indexed by token id), in a context of
 * `contextSize` tokens when given (else the prompt's, rounded up to 256).
 */
async function logits({ ids, vocab, f32, contextSize }) {
  const ctx = await context(ids.length, 1, undefined, {
    ...(f32 ? F32_CONTEXT : {}),
    ...(contextSize === undefined ? {} : { contextSize }),
  });
  try {
    const want = { generateNext: { logits: true } };
    const out = await ctx.getSequence().controlledEvaluate(
      ids.map((t) => [t, want]),
    );
    return {
      logits: out.map((r, i) => {
        const row = new Array(vocab).fill(0);
        let n = 0;
        for (const [t, v] of r?.next?.logits ?? []) {
          if (t >= vocab) continue;
          row[t] = v;
          n++;
        }
        // A missing token would read as a logit of 0: refuse instead.
        if (n !== vocab) {
          throw new Error(`position ${i}: ${n} logits, vocab ${vocab}`);
        }
        return row;
      }),
    };
  } finally {
    await ctx.dispose();
  }
}

/** The model's own tokenizer on `text`, special-token text kept as text, no BOS added. */
function tokenize({ text }) {
  return { tokens: [...model.tokenize(text, false)] };
}

const ops = { setup, greedy, decode, prefill, tokenize, logits };
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const req = JSON.parse(line);
  if (req.op === "close") {
    await model?.dispose();
    await llama?.dispose();
    process.stdout.write(JSON.stringify({ ok: true }) + "\n");
    break;
  }
  try {
    const fn = ops[req.op];
    if (!fn) throw new Error(`unknown op ${req.op}`);
    process.stdout.write(JSON.stringify({ ok: await fn(req) }) + "\n");
  } catch (e) {
    process.stdout.write(
      JSON.stringify({ error: String(e?.stack ?? e) }) + "\n",
    );
  }
}
process.exit(0);
