/**
 * Every command-line entry point, spawned with a bad flag, a flag given twice, a flag without
 * its value, and `--help` / `-h`: exit 2 with the flag named and the usage (nothing printed
 * before it: the tool stopped before loading anything), or exit 0 with the usage on stdout. The
 * Deno tools run without write, net, run or FFI permissions, so a tool that went on to load a
 * model, listen or write a file would fail differently. A last test finds every file that reads
 * a command line and checks it is in the table.
 */
import { ok, strictEqual as equal } from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);

interface Entry {
  /** The path from the repository root. */
  path: string;
  /** The name its errors start with. */
  name: string;
  /** A flag and its value (or a switch alone), for the repeated and missing-value cases. */
  flag?: string[];
}

const ENTRIES: Entry[] = [
  { path: "src/adapters/deno/serve.ts", name: "serve", flag: ["--port", "0"] },
  { path: "src/adapters/deno/fortune.ts", name: "fortune", flag: ["--model", "/nonexistent"] },
  { path: "src/adapters/deno/verify.ts", name: "verify", flag: ["--model", "/nonexistent"] },
  { path: "src/adapters/deno/reference.ts", name: "reference", flag: ["--out", "/tmp/x.json"] },
  { path: "src/adapters/deno/quantize.ts", name: "quantize", flag: ["--type", "q8_0"] },
  { path: "src/adapters/deno/probe.ts", name: "probe", flag: ["--base", "http://127.0.0.1:9/"] },
  { path: "src/adapters/deno/conformance.ts", name: "conformance", flag: ["--engine", "mock"] },
  { path: "bench/engine/bench.ts", name: "bench", flag: ["--tokens", "4"] },
  { path: "bench/kernels/attention.ts", name: "attention", flag: ["--out", "/tmp/x.json"] },
  { path: "bench/kernels/matmul.ts", name: "matmul", flag: ["--small"] },
  { path: "bench/kernels/quant.ts", name: "quant", flag: ["--types", "Q8_0"] },
  { path: "bench/kernels/gemm.ts", name: "gemm", flag: ["--iters", "1"] },
  { path: "bench/kernels/gemm_quant.ts", name: "gemm_quant", flag: ["--iters", "1"] },
  { path: "bench/kernels/float_products.ts", name: "float_products", flag: ["--iters", "1"] },
  { path: "bench/kernels/sampler.ts", name: "sampler", flag: ["--vocab", "100"] },
  { path: "bench/engine/engine.ts", name: "engine", flag: ["--tokens", "4"] },
  { path: "bench/chart.ts", name: "chart" },
  { path: "bench/engine/readme_rows.ts", name: "readme_rows" },
  { path: "bench/peers/check.ts", name: "check", flag: ["--tokens", "4"] },
  { path: "tools/peers/to_gguf.ts", name: "to_gguf" },
  { path: "tools/fixtures/ggml_blocks.ts", name: "ggml_blocks" },
  { path: "tools/fixtures/llama_quantize.ts", name: "llama_quantize", flag: ["--out", "/tmp/x"] },
  { path: "tools/fixtures/llamacpp_greedy.ts", name: "llamacpp_greedy", flag: ["--tokens", "4"] },
  { path: "tools/fixtures/iq4_nl_values.ts", name: "iq4_nl_values" },
  { path: "tools/peers/to_onnx.ts", name: "to_onnx", flag: ["--f32"] },
  { path: "tools/peers/tiny_checkpoint.ts", name: "tiny_checkpoint", flag: ["--layers", "1"] },
  { path: "tools/fixtures/iq_tables.ts", name: "iq_tables", flag: ["--check"] },
  {
    path: "tools/fixtures/family_checkpoints.ts",
    name: "family_checkpoints",
    flag: ["--out", "/x"],
  },
  { path: "tools/fixtures/phi3_longrope.ts", name: "phi3_longrope", flag: ["--out", "/x"] },
  {
    path: "tools/fixtures/family_quantized.ts",
    name: "family_quantized",
    flag: ["--families", "qwen3"],
  },
  { path: "tools/fixtures/tokenizer_corpus.ts", name: "tokenizer_corpus", flag: ["--out", "/x"] },
  { path: "bench/kernels/moe.ts", name: "moe", flag: ["--iters", "1"] },
  { path: "bench/probes/dp4a.ts", name: "dp4a", flag: ["--quick"] },
  { path: "bench/engine/gpu_table.ts", name: "bench:gpu", flag: ["--budget-s", "60"] },
  { path: "bench/engine/speculative.ts", name: "bench:spec", flag: ["--tokens", "16"] },
  { path: "bench/engine/upload.ts", name: "upload", flag: ["--rounds", "1"] },
  { path: "bench/engine/gpu_memory.ts", name: "gpu_memory", flag: ["--out", "/tmp/x.json"] },
  { path: "bench/kernels/token_mask.ts", name: "token_mask", flag: ["--iters", "1"] },
  { path: "bench/engine/guided_engine.ts", name: "guided_engine", flag: ["--tokens", "4"] },
  { path: "bench/engine/guided_forcing.ts", name: "guided_forcing", flag: ["--rounds", "1"] },
  { path: "bench/engine/guided_validity.ts", name: "guided_validity", flag: ["--n", "4"] },
  { path: "bench/engine/guided_stall.ts", name: "guided_stall", flag: ["--rounds", "1"] },
  { path: "bench/engine/schema_corpus.ts", name: "schema_corpus", flag: ["--every", "6"] },
  { path: "scripts/schema_corpus.ts", name: "schema_corpus" },
  { path: "test/run.ts", name: "test" },
  { path: "scripts/logit_errors.ts", name: "logit_errors" },
  { path: "scripts/demo.mjs", name: "start", flag: ["--port", "1"] },
  { path: "scripts/build_package.mjs", name: "build", flag: ["--write-exports"] },
  { path: "scripts/conformance_browser.mjs", name: "conformance:browser" },
  {
    path: "bench/kernels/matvec_browser.mjs",
    name: "matvec_browser",
    flag: ["--out", "/tmp/x.json"],
  },
];

/** Run `entry` with `args`: Deno tools with read and env permissions only; Node scripts as is. */
async function run(entry: Entry, args: string[], env: Record<string, string> = {}) {
  const path = new URL(entry.path, ROOT).pathname;
  const [cmd, argv] = entry.path.endsWith(".mjs")
    ? ["node", [path, ...args]]
    : [Deno.execPath(), ["run", "--no-prompt", "--allow-read", "--allow-env", path, ...args]];
  const out = await new Deno.Command(cmd, {
    args: argv,
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Exit 2, stderr the error (starting `name: ` and containing `needle`) then the usage. */
async function refused(
  entry: Entry,
  args: string[],
  needle: string,
  env: Record<string, string> = {},
) {
  const r = await run(entry, args, env);
  const what = `${entry.path} ${args.join(" ")}`;
  equal(r.code, 2, `${what}: exit ${r.code}\n${r.stderr}`);
  const [first] = r.stderr.split("\n");
  ok(first!.startsWith(`${entry.name}: `) && first!.includes(needle), `${what}: ${r.stderr}`);
  ok(r.stderr.includes("\n\nusage: "), `${what}: no usage: ${r.stderr}`);
  equal(r.stdout, "", `${what}: printed before stopping`);
  return r;
}

for (const entry of ENTRIES) {
  Deno.test(`${entry.path}: a bad flag, a repeated flag, a missing value: exit 2; --help: 0`, async () => {
    const help = async (flag: string) => {
      const r = await run(entry, [flag]);
      equal(r.code, 0, `${entry.path} ${flag}: ${r.stderr}`);
      ok(r.stdout.startsWith("usage: "), `${entry.path} ${flag}: ${r.stdout}`);
      ok(r.stdout.includes("-h, --help"), r.stdout);
      if (entry.flag) ok(r.stdout.includes(entry.flag[0]!), `${entry.flag[0]} in the usage`);
    };
    const name = entry.flag?.[0];
    // Independent runs, side by side.
    await Promise.all([
      refused(entry, ["--no-such-flag", "s3cret"], "unknown flag --no-such-flag").then((bad) =>
        ok(!bad.stderr.includes("s3cret"), "the unknown flag's value is not printed")
      ),
      help("--help"),
      help("-h"),
      entry.flag && refused(entry, [...entry.flag, ...entry.flag], `${name} given more than once`),
      entry.flag?.length === 2 && refused(entry, [name!], name!),
    ]);
  });
}

Deno.test("serve --api-kye s3cret is refused with exit 2, the flag named and the key not printed", async () => {
  const serve = ENTRIES[0]!;
  const r = await refused(serve, ["--model", "/nonexistent", "--api-kye", "s3cret"], "--api-kye");
  ok(!r.stderr.includes("s3cret"), r.stderr);
  await refused(serve, ["--api-kye=s3cret"], "unknown flag --api-kye");
  await refused(serve, ["--port", "abc"], "--port");
  await refused(serve, ["--port", "70000"], "--port");
  await refused(serve, ["--kv-blocks", "-1"], "--kv-blocks");
  await refused(serve, ["--kv-blocks=-1"], "--kv-blocks");
  await refused(serve, ["--max-queued", "4.5"], "--max-queued");
  await refused(serve, ["--engine", "cuda"], "--engine");
  await refused(serve, ["--variant", "model"], "--variant and --ep need --engine ort");
  await refused(serve, ["stray"], "unexpected argument 1");
});

Deno.test("fortune: bad environment values and a second argument are refused before loading", async () => {
  const fortune = ENTRIES[1]!;
  await Promise.all([
    refused(fortune, [], 'KILN_SEED: expected an integer >= 0, got "abc"', { KILN_SEED: "abc" }),
    refused(fortune, [], "KILN_MAX_TOKENS", { KILN_MAX_TOKENS: "0" }),
    refused(fortune, ["You", "will"], 'at most 1 argument ([PROMPT]), got "You" "will"'),
  ]);
});

Deno.test("KILN_KERNEL_PATHS other than cpu or gpu is refused before loading by every tool that reads it", async () => {
  const readers = ["serve", "fortune", "verify", "conformance", "logit_errors"];
  const entries = ENTRIES.filter((e) => readers.includes(e.name));
  equal(entries.length, readers.length);
  await Promise.all(entries.map((e) =>
    refused(
      e,
      e.flag?.[0] === "--model" || e.flag?.[0] === "--engine" ? e.flag : [],
      'KILN_KERNEL_PATHS: expected one of cpu, gpu, got "fast"',
      { KILN_KERNEL_PATHS: "fast" },
    )
  ));
});

/** Files that read a command line, outside the helpers and tests. */
async function commandLineReaders(): Promise<string[]> {
  const found: string[] = [];
  const skip = /(_test\.ts|\.test\.mjs|\/flags\.(ts|mjs))$/;
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(new URL(dir, ROOT))) {
      const path = `${dir}${e.name}`;
      if (e.isDirectory && e.name !== "node_modules" && e.name !== "results") {
        await walk(`${path}/`);
      } else if (/\.(ts|mjs)$/.test(e.name) && !skip.test(path)) {
        const text = await Deno.readTextFile(new URL(path, ROOT));
        if (/Deno\.args|process\.argv|runCli\(|runFlags\(/.test(text)) found.push(path);
      }
    }
  };
  for (const dir of ["src/", "bench/", "tools/", "scripts/", "test/"]) await walk(dir);
  return found.sort();
}

Deno.test("every file that reads a command line is in the table above", async () => {
  const listed = new Set(ENTRIES.map((e) => e.path));
  const found = await commandLineReaders();
  const missing = found.filter((p) => !listed.has(p));
  equal(missing.join(", "), "", "entry points missing from test/cli_test.ts");
  equal([...listed].filter((p) => !found.includes(p)).join(", "), "", "stale entries");
});
