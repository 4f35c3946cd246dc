/**
 * How Kiln's Deno tools end and what they print, run as a user runs them: a port in use and a
 * `--model` path that does not exist each end the run with one line and exit code 2 (every tool
 * that takes a model path); with `XDG_RUNTIME_DIR` unset no tool prints the GPU stack's complaint
 * about it; `fortune` prints its metrics only with `--metrics`; and `serve`'s drain-time gauge,
 * after SIGTERM while a stream runs, is at least the time the drain held that stream.
 */
import { ok, strictEqual as equal } from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const tool = (path: string) => new URL(path, ROOT).pathname;
const SERVE = tool("src/adapters/deno/serve.ts");
const FORTUNE = tool("src/adapters/deno/fortune.ts");
/** The line libwayland prints when `XDG_RUNTIME_DIR` is unset (twice per GPU adapter, before). */
const XDG_NOISE = /XDG_RUNTIME_DIR/;

/** This process's environment without `XDG_RUNTIME_DIR`, and `extra`. */
function envWithoutXdg(extra: Record<string, string> = {}): Record<string, string> {
  const env = Deno.env.toObject();
  delete env.XDG_RUNTIME_DIR;
  return { ...env, ...extra };
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `deno run -A script ...args` to its end. */
async function run(
  script: string,
  args: string[],
  o: { cwd?: string; env?: Record<string, string> } = {},
): Promise<Run> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-no-legacy-abort", script, ...args],
    ...(o.cwd ? { cwd: o.cwd } : {}),
    clearEnv: true,
    env: o.env ?? envWithoutXdg(),
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

Deno.test("serve on a port in use: one line naming the port, exit 2", async () => {
  using held = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = held.addr.port;
  const r = await run(SERVE, ["--port", String(port)]);
  equal(r.code, 2, r.stderr);
  equal(r.stderr, `serve: port ${port} is in use (another server?); pick another with --port\n`);
  equal(r.stdout, "");
});

Deno.test("a --model path that does not exist: one line naming it, exit 2, in every tool", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "kiln-cwd-" }));
  try {
    const path = "./modls/fortune";
    const missing = (flag = "--model", p = path) =>
      `${flag} ${p} does not exist (relative to ${cwd})\n`;
    const cases: [string, string, string[], string][] = [
      ["serve", SERVE, ["--model", path], missing()],
      ["fortune", FORTUNE, ["--model", path], missing()],
      ["verify", tool("src/adapters/deno/verify.ts"), ["--model", path], missing()],
      [
        "reference",
        tool("src/adapters/deno/reference.ts"),
        ["--model", path, "--out", "r.json"],
        missing(),
      ],
      [
        "quantize",
        tool("src/adapters/deno/quantize.ts"),
        ["--model", path, "--type", "q8_0", "--out", "m.gguf"],
        missing(),
      ],
      [
        "conformance",
        tool("src/adapters/deno/conformance.ts"),
        ["--engine", "webgpu", "--model", path],
        missing(),
      ],
      [
        "serve",
        SERVE,
        ["--speculative-config", '{"model":"./draft.gguf","num_speculative_tokens":2}'],
        missing("--speculative-config model", "./draft.gguf"),
      ],
    ];
    const runs = await Promise.all(cases.map(([, script, args]) => run(script, args, { cwd })));
    for (const [i, [name, , , line]] of cases.entries()) {
      const r = runs[i]!;
      equal(r.code, 2, `${name}: ${r.stderr}`);
      equal(r.stderr, `${name}: ${line}`, name);
    }
    equal((await Array.fromAsync(Deno.readDir(cwd))).length, 0, "nothing written");
  } finally {
    await Deno.remove(cwd, { recursive: true });
  }
});

Deno.test("fortune, XDG_RUNTIME_DIR unset: the text and no complaint; metrics only with --metrics", async () => {
  const env = envWithoutXdg({ KILN_SEED: "7", KILN_MAX_TOKENS: "6" });
  const plain = await run(FORTUNE, ["You will"], { env });
  equal(plain.code, 0, plain.stderr);
  ok(plain.stdout.startsWith("You will") && /\(6 tokens in /.test(plain.stdout), plain.stdout);
  ok(!plain.stdout.includes("dynamo_component_"), plain.stdout);
  ok(!XDG_NOISE.test(plain.stderr), plain.stderr);
  const metrics = await run(FORTUNE, ["You will", "--metrics"], { env });
  equal(metrics.code, 0, metrics.stderr);
  ok(/^# TYPE dynamo_component_drain_time_seconds gauge$/m.test(metrics.stdout), metrics.stdout);
  ok(/^dynamo_frontend_requests_total\{/m.test(metrics.stdout), metrics.stdout);
  ok(!XDG_NOISE.test(metrics.stderr), metrics.stderr);
  const help = await run(FORTUNE, ["--help"]);
  ok(/--metrics\b/.test(help.stdout), help.stdout);
});

Deno.test("serve, XDG_RUNTIME_DIR unset: no complaint; the drain-time gauge covers a held stream", async () => {
  const DRAIN_S = 1;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-no-legacy-abort",
      SERVE,
      "--port",
      "0",
      "--drain-timeout",
      String(DRAIN_S),
    ],
    clearEnv: true,
    env: envWithoutXdg(),
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const errDone = (async () => {
    for await (const c of child.stderr.pipeThrough(new TextDecoderStream())) stderr += c;
  })();
  const out = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let stdout = "", url: string | undefined;
  while (url === undefined) {
    const { value, done } = await out.read();
    if (done) throw new Error(`serve exited before listening: ${stderr}`);
    stdout += value;
    url = stdout.match(/listening on (http:\/\/\S+)/)?.[1];
  }
  for (let i = 0; i < 600; i++) {
    const r = await fetch(`${url}/health`).catch(() => undefined);
    await r?.body?.cancel();
    if (r?.status === 200) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  // A stream longer than the drain allows here (lavapipe: ~30 tokens/s): held until the drain
  // deadline cuts it. A GPU fast enough to end it sooner is held as long as the stream ran.
  const res = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "fortune",
      prompt: "You will",
      max_tokens: 900,
      ignore_eos: true,
      stream: true,
    }),
  });
  equal(res.status, 200);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let sse = (await reader.read()).value ?? "";
  const signalled = performance.now();
  child.kill("SIGTERM");
  for (let r = await reader.read(); !r.done; r = await reader.read()) sse += r.value;
  const held = (performance.now() - signalled) / 1000;
  const { code } = await child.status;
  await out.cancel().catch(() => {});
  await errDone;
  equal(code, 0, stderr);
  const cut = sse.includes('"finish_reason":"abort"');
  equal(cut, /cut 1 request\(s\) at the drain deadline/.test(stderr), stderr);
  // Cut: the drain waited its whole deadline. Not cut: it lasted until the stream ended, which
  // the client saw a little later (the signal's delivery, the last chunk's trip: 0.1 s at most).
  const least = cut ? DRAIN_S : held - 0.1;
  const drain = Number(stderr.match(/^dynamo_component_drain_time_seconds\{[^}]*\} (\S+)$/m)?.[1]);
  ok(drain >= least && drain < DRAIN_S + 10, `drain ${drain} s, the stream held ${held} s`);
  ok(!XDG_NOISE.test(stderr), stderr);
});
