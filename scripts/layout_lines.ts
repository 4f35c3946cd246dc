/**
 * Prints the tables of `docs/layout.md` in markdown: each folder of the tree with its job and its
 * lines (`.ts`, `.mjs`, `.wgsl`; code and tests (`_test.ts`, `.test.mjs`) counted apart, `node_modules/` left
 * out), then which `src/` folders each `src/` folder imports (non-test modules; the same reading of
 * imports as `test/layers_test.ts`), lowest layer first. A folder's row counts the files directly
 * in it and in its subfolders, except subfolders that have a row of their own. Run from anywhere:
 * `node_modules/.bin/deno run -A scripts/layout_lines.ts`, and paste its output over the tables.
 */

const ROOT = new URL("../", import.meta.url);

/** Folder (repo-relative, no trailing slash) → its job, in the order the table lists them. */
const JOBS: [string, string][] = [
  [
    "src",
    "`mod.ts`: the app's entry point (`openModel`, the store); `internal.ts`: the rest, unstable",
  ],
  [
    "src/api",
    "the other stable entry points: `contract`, `conformance`, `metrics`, `engines/mock`",
  ],
  [
    "src/contract",
    "`LLMEngine`, requests and outputs, `EngineError`, wire JSON, validation, KV events and geometry; `metrics/`: `EngineMetrics`, the registry, Prometheus/OpenMetrics rendering",
  ],
  [
    "src/metrics",
    "`RequestMetrics` (`dynamo_frontend_*`), router gauges, lifecycle timings (the registry is in `contract/metrics/`)",
  ],
  ["src/conformance", "`runConformance`, its checks, the report, broken engines"],
  [
    "src/formats",
    "checkpoint readers: sources (files, URLs), safetensors, GGUF header, metadata and value types",
  ],
  [
    "src/text",
    "tokenizers, incremental detokenisation, stop strings, chat templates; `gguf/`: GGUF vocabularies",
  ],
  [
    "src/model",
    "what a model is: HF config readers, attention knobs, RoPE, weight map, fused experts, checkpoint",
  ],
  [
    "src/model/arch",
    "one description per family (a layer recipe: data, compiled for the GPU and run in float64)",
  ],
  ["src/model/gguf", "a GGUF file's config and tensors, the test model writer"],
  [
    "src/gpu",
    "device acquisition, kernel paths, pipeline cache, shader composer, dispatch, buffers, memory ledger",
  ],
  [
    "src/gpu/formats",
    "one file per weight format (`{ block, codec, fragment }`), the registry, the floats",
  ],
  ["src/gpu/product", "`prepareProduct`: the matvec and tiled GEMM products with their epilogues"],
  [
    "src/gpu/kernels",
    "the other kernels' wrappers: attention, KV write, RoPE, norms, MoE, sampler, token store",
  ],
  [
    "src/runtime",
    "the model on the GPU: upload, staging, `Forward`, the step plans, `startModel`, `generate`",
  ],
  ["src/reference", "the float64 model and layer, `verify`, rounding, the parity tests"],
  ["src/reference/kernels", "float64 references of the kernels"],
  ["src/convert", "the GGUF writer, the converter, the quant mix (a tool above `model/`)"],
  [
    "src/engines",
    "what engines share: lifecycle, admission, `Sequence` and its channel, live requests, read-back, block hashes, speculation",
  ],
  [
    "src/engines/webgpu",
    "`WebGpuEngine`: the face (`engine.ts`), the core (`core.ts`), scheduler, block manager, token store",
  ],
  [
    "src/engines/guided",
    "guided decoding: the JSON Schema compiler, XGrammar in its grammar worker",
  ],
  ["src/engines/ort", "`OrtEngine` (onnxruntime-web) and its CPU sampler"],
  ["src/engines/mock", "`MockEngine`: deterministic tokens, fake KV blocks"],
  [
    "src/openai",
    "the OpenAI layer: request bodies to jobs, the serving layer (`serving.ts`), chunks, tool calls, reasoning, Responses, the `create` helpers",
  ],
  ["src/store", "the model store: OPFS, Cache Storage, resumed and checked downloads"],
  [
    "src/worker",
    "`WorkerEngine` (main thread), the engine host (worker side), `openModel`, shared tabs, the Prompt API",
  ],
  [
    "src/server",
    "HTTP over the serving layer (Web-standard `Request`/`Response`): routes, auth, limits, SSE, drain, the worker supervisor",
  ],
  [
    "src/adapters",
    "runtime-specific code: Deno CLIs (serve, conformance, verify, probe, ...), the HTTP front, worker modules",
  ],
  ["shaders", "WGSL kernels, one family per file, parameterised by `override` constants"],
  [
    "shaders/product",
    "the product kernels (matvec, tiled GEMM, float GEMM), `Params` and the epilogue",
  ],
  ["shaders/formats", "one decode fragment per weight format"],
  ["shaders/lib", "fragments several kernels import"],
  ["shaders/sampling", "the sampler's integer arithmetic and radix select"],
  ["bench", "the chart"],
  [
    "bench/engine",
    "engine benchmarks (`npx deno task bench`, `bench:gpu`, `bench:spec`, `bench:schemas`)",
  ],
  ["bench/kernels", "kernel benchmarks; replaced kernels read from tagged commits"],
  ["bench/probes", "device probes (dp4a, FMA, reads)"],
  ["bench/peers", "the peers' engines run beside Kiln's"],
  ["bench/lib", "timing and naming helpers"],
  ["tools/fixtures", "the scripts that write committed fixtures from llama.cpp, ggml and jinja2"],
  ["tools/peers", "the dev-only peers' packages and llama.cpp, ggml, ONNX access"],
  ["test", "the runner (`run.ts`) and repo-wide checks (layers, public API, publish, README)"],
  ["test/support", "shared test support"],
  ["test/node", "the Node suite"],
  ["test/browser", "the browser suite"],
  ["test/browser_big", "the big-model browser suite"],
  ["test/server", "the server end to end"],
  ["test/integrations", "Dynamo, KV events, two servers"],
  ["test/fuzz", "the fuzzers and their corpus"],
];

const CODE = /\.(?:ts|mjs|wgsl)$/;
const TEST = /(?:_test\.ts|\.test\.mjs)$/;
const SKIP = new Set(["node_modules", "results", "artifacts"]);

/** Lines of code and of tests under `dir`, leaving out subfolders in `own` (they have rows). */
async function count(dir: string, own: Set<string>): Promise<{ code: number; test: number }> {
  const sum = { code: 0, test: 0 };
  const walk = async (rel: string) => {
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(new URL(`${rel}/`, ROOT)));
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return;
      throw e;
    }
    for (const e of entries) {
      const path = `${rel}/${e.name}`;
      if (e.isDirectory) {
        if (!SKIP.has(e.name) && !own.has(path)) await walk(path);
      } else if (e.isFile && CODE.test(e.name)) {
        const text = await Deno.readTextFile(new URL(path, ROOT));
        const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
        if (TEST.test(e.name)) sum.test += lines;
        else sum.code += lines;
      }
    }
  };
  await walk(dir);
  return sum;
}

/** The lines table. */
async function linesTable(): Promise<string[]> {
  const own = new Set(JOBS.map(([dir]) => dir));
  const rows = ["| folder | job | lines | test lines |", "| --- | --- | ---: | ---: |"];
  const totals = new Map<string, { code: number; test: number }>();
  for (const [dir, job] of JOBS) {
    const { code, test } = await count(dir, own);
    if (code + test === 0) continue;
    const root = dir.split("/")[0]!;
    const total = totals.get(root) ?? totals.set(root, { code: 0, test: 0 }).get(root)!;
    total.code += code;
    total.test += test;
    const name = dir === "src" ? "`src/*.ts`" : `\`${dir}/\``;
    rows.push(`| ${name} | ${job} | ${code.toLocaleString("en")} | ${test.toLocaleString("en")} |`);
  }
  for (const [root, { code, test }] of totals) {
    rows.push(
      `| \`${root}/\` in all | | ${code.toLocaleString("en")} | ${test.toLocaleString("en")} |`,
    );
  }
  return rows;
}

/** First-level `src/` folder (or `mod.ts`, `internal.ts`) → the others its non-test modules import. */
async function folderImports(): Promise<Map<string, Set<string>>> {
  const graph = new Map<string, Set<string>>();
  const folderOf = (path: string) => path.slice("src/".length).split("/")[0]!;
  const walk = async (rel: string) => {
    for await (const e of Deno.readDir(new URL(`${rel}/`, ROOT))) {
      const path = `${rel}/${e.name}`;
      if (e.isDirectory) await walk(path);
      else if (e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) {
        const from = folderOf(path);
        const set = graph.get(from) ?? graph.set(from, new Set()).get(from)!;
        const text = await Deno.readTextFile(new URL(path, ROOT));
        const specs = text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g);
        for (const [, spec] of specs) {
          const to = new URL(spec!, new URL(path, "file:///")).pathname.slice(1);
          if (to.startsWith("src/") && folderOf(to) !== from) set.add(folderOf(to));
        }
      }
    }
  };
  await walk("src");
  return graph;
}

/** The import table: folders in layers (a folder imports only folders of lower layers). */
async function importsTable(): Promise<string[]> {
  const graph = await folderImports();
  const layer = new Map<string, number>();
  const depth = (f: string, seen: string[]): number => {
    if (seen.includes(f)) throw new Error(`folder loop: ${[...seen, f].join(" -> ")}`);
    if (!layer.has(f)) {
      const below = [...graph.get(f) ?? []].map((g) => depth(g, [...seen, f]));
      layer.set(f, below.length === 0 ? 0 : Math.max(...below) + 1);
    }
    return layer.get(f)!;
  };
  for (const f of graph.keys()) depth(f, []);
  const order = [...graph.keys()].sort((a, b) =>
    layer.get(a)! - layer.get(b)! || a.localeCompare(b)
  );
  const rows = ["| layer | folder | imports |", "| ---: | --- | --- |"];
  for (const f of order) {
    const name = f.endsWith(".ts") ? `\`src/${f}\`` : `\`${f}/\``;
    const to = [...graph.get(f)!].sort().map((g) => `\`${g}\``).join(", ") || "-";
    rows.push(`| ${layer.get(f)} | ${name} | ${to} |`);
  }
  return rows;
}

console.log((await linesTable()).join("\n"));
console.log();
console.log((await importsTable()).join("\n"));
