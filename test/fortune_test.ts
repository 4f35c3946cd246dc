/**
 * `npm run fortune`: a fortune streamed by the WebGPU engine, then (`--metrics`, which every run
 * here passes) metrics promtool accepts.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { promtoolCheck } from "./support/promtool.ts";
import { encodeGguf } from "../src/formats/gguf/test_encoder.ts";
import { tinyMetadata, tinyTensors } from "../src/model/gguf/test_model.ts";
import { quantizeToFile } from "../src/adapters/deno/quantize.ts";

const FORTUNE_CLI = new URL("../src/adapters/deno/fortune.ts", import.meta.url).pathname;
const FORTUNE_DIR = new URL("../models/fortune/", import.meta.url).pathname;

async function fortune(args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", FORTUNE_CLI, "--metrics", ...args],
    env: { KILN_SEED: "11", KILN_MAX_TOKENS: "48", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** The prompt length the run's metrics report (`dynamo_frontend_input_sequence_tokens`). */
const promptTokens = (stdout: string) =>
  Number(stdout.match(/^dynamo_frontend_input_sequence_tokens_sum\{[^}]*\} (\S+)$/m)?.[1]);

Deno.test("npm run fortune streams a fortune from the engine and prints metrics promtool accepts", async () => {
  const { code, stdout: text, stderr } = await fortune(["A "]);
  equal(code, 0, stderr);
  const [story, metrics] = text.split("--- metrics (Prometheus text) ---");
  ok(story && /\(\d+ tokens in/.test(story), text);
  ok(story.trim().length > 10, "some text was generated");
  const load = metrics?.match(/^dynamo_component_model_load_time_seconds\{[^}]*\} (\S+)$/m);
  ok(load && Number(load[1]) > 0, "model load time is reported");
  ok(/^dynamo_component_total_blocks\{[^}]*dp_rank="0"\} 64$/m.test(metrics!), "KV gauges");
  ok(/^dynamo_frontend_requests_total\{[^}]*status="success"[^}]*\} 1$/m.test(metrics!));
  const check = await promtoolCheck(metrics!.trimStart());
  ok(check.ok, check.output);
});

Deno.test("npm run fortune with no prompt starts from fortune's BOS token", async () => {
  const { code, stdout, stderr } = await fortune([], { KILN_MAX_TOKENS: "8" });
  equal(code, 0, stderr);
  equal(promptTokens(stdout), 1, stdout);
  ok(/\(\d+ tokens in/.test(stdout), stdout);
});

Deno.test("npm run fortune with no prompt on GGUFs that add no BOS: BOS if the model has one, else exit 2", async () => {
  const dir = await Deno.makeTempDir({ prefix: "kiln-fortune-" });
  try {
    const noAdd = { ...tinyMetadata(), "tokenizer.ggml.add_bos_token": false };
    await Deno.writeFile(`${dir}/no-add.gguf`, encodeGguf(noAdd, tinyTensors()));
    const { code, stdout, stderr } = await fortune(["--model", `${dir}/no-add.gguf`], {
      KILN_MAX_TOKENS: "4",
    });
    equal(code, 0, stderr);
    equal(promptTokens(stdout), 1, stdout);
    ok(/\(4 tokens in/.test(stdout), stdout);

    const noBos: Record<string, unknown> = { ...noAdd };
    delete noBos["tokenizer.ggml.bos_token_id"];
    await Deno.writeFile(`${dir}/no-bos.gguf`, encodeGguf(noBos as typeof noAdd, tinyTensors()));
    const none = await fortune(["--model", `${dir}/no-bos.gguf`]);
    equal(none.code, 2, none.stderr);
    ok(
      none.stderr.includes("no-bos has no BOS token to start from: a PROMPT is needed"),
      none.stderr,
    );
    ok(!none.stderr.includes("loaded in"), "refused before the engine started");
    // With a prompt the same file runs.
    const given = await fortune(["--model", `${dir}/no-bos.gguf`, "hello"], {
      KILN_MAX_TOKENS: "2",
    });
    equal(given.code, 0, given.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("npm run fortune on a Q4_K_M GGUF continues a prompt longer than one prefill chunk", async () => {
  // Fortune's tokenizer takes a character a token: 300 of them are two chunks of the engine's
  // 256, the first without logits (once 'matvec_quant: m must be an integer >= 1, got 0').
  const dir = await Deno.makeTempDir({ prefix: "kiln-fortune-" });
  try {
    const file = `${dir}/fortune-q4_k_m.gguf`;
    await quantizeToFile(FORTUNE_DIR, file, "q4_k_m");
    const prompt = "A wise old owl sat in an oak. ".repeat(10);
    const { code, stdout, stderr } = await fortune(["--model", file, prompt], {
      KILN_MAX_TOKENS: "4",
    });
    equal(code, 0, stderr);
    ok(promptTokens(stdout) > 256, stdout);
    ok(/\(4 tokens in/.test(stdout), stdout);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("npm run fortune: a request the engine fails, or a model it cannot load, ends with one line naming the error, no stack", async () => {
  // 1100 characters and BOS: more tokens than fortune's context of 1024.
  const long = await fortune(["x".repeat(1100)], { KILN_MAX_TOKENS: "4" });
  equal(long.code, 1, long.stderr);
  const line = "fortune: InvalidArgument: request.token_ids: 1101 tokens leave no room in the " +
    "context of 1024";
  ok(long.stderr.includes(line), long.stderr);
  ok(!/Uncaught|\n\s+at /.test(long.stderr), long.stderr);
  // The failed request is counted as such, then the engine shut down and printed its metrics.
  ok(
    /^dynamo_frontend_requests_total\{[^}]*status="error"[^}]*\} 1$/m.test(long.stdout),
    long.stdout,
  );
  const missing = await fortune(["--model", "/nonexistent", "hello"]);
  equal(missing.code, 2, missing.stderr);
  equal(missing.stderr, "fortune: --model /nonexistent does not exist\n");
  const empty = await Deno.makeTempDir({ prefix: "kiln-fortune-" });
  try {
    const none = await fortune(["--model", empty, "hello"]);
    equal(none.code, 2, none.stderr);
    equal(none.stderr, `fortune: InvalidArgument: ${empty}/: no tokenizer.json\n`);
  } finally {
    await Deno.remove(empty);
  }
});
