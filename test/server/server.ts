/**
 * Start `serve.ts` on a free port with a copy of the fortune model (or of its ONNX export) whose
 * chat template refuses system messages (so a template error can be tested), and stop it with
 * SIGTERM.
 */
const ROOT = new URL("../../", import.meta.url);

export interface RunningServer {
  url: string;
  /** What serve has written to stderr so far. */
  log(): string;
  stop(): Promise<{ code: number; stderr: string }>;
}

const TEMPLATE = "{% for m in messages %}{% if m.role == 'system' %}" +
  "{{ raise_exception('system messages are not supported') }}{% endif %}" +
  "{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}";

/** The model folder to copy, and the files (relative paths) to copy from it. */
export interface ServedModel {
  dir: string;
  files: string[];
}

const FORTUNE: ServedModel = {
  dir: new URL("models/fortune/", ROOT).pathname,
  files: ["config.json", "model.safetensors", "tokenizer.json"],
};

/**
 * `source` `"default"`: serve as a newcomer runs it, with no `--model` and no `--name` (the
 * embedded fortune model as it ships, its own chat template).
 */
export async function startServer(
  extra: string[] = [],
  source: ServedModel | "default" = FORTUNE,
): Promise<RunningServer> {
  const dir = await Deno.makeTempDir({ prefix: "kiln-serve-" });
  for (const f of source === "default" ? [] : source.files) {
    const to = `${dir}/${f}`;
    await Deno.mkdir(to.slice(0, to.lastIndexOf("/")), { recursive: true });
    await Deno.copyFile(`${(source as ServedModel).dir.replace(/\/?$/, "/")}${f}`, to);
  }
  await Deno.writeTextFile(
    `${dir}/tokenizer_config.json`,
    JSON.stringify({ chat_template: TEMPLATE }),
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-no-legacy-abort",
      new URL("src/adapters/deno/serve.ts", ROOT).pathname,
      // `extra` may name its own model (serve refuses a flag given twice).
      ...(extra.includes("--model") || source === "default" ? [] : ["--model", dir]),
      ...(source === "default" ? [] : ["--name", "fortune"]),
      "--port",
      "0",
      ...extra,
    ],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const errDone = (async () => {
    for await (const c of child.stderr.pipeThrough(new TextDecoderStream())) stderr += c;
  })();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  let url: string | undefined;
  while (url === undefined) {
    const { value, done } = await lines.read();
    if (done) throw new Error(`serve exited before listening: ${stderr}`);
    out += value;
    url = out.match(/listening on (http:\/\/\S+)/)?.[1];
  }
  // Ready once /health says so.
  for (let i = 0; i < 600; i++) {
    const r = await fetch(`${url}/health`).catch(() => undefined);
    const ok = r?.status === 200;
    await r?.body?.cancel();
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    log: () => stderr,
    async stop() {
      child.kill("SIGTERM");
      const { code } = await child.status;
      lines.releaseLock();
      await child.stdout.cancel().catch(() => {});
      await errDone;
      await Deno.remove(dir, { recursive: true });
      return { code, stderr };
    },
  };
}
