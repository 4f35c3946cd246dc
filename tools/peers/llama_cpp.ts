/**
 * llama.cpp through node-llama-cpp's prebuilt binaries, in a Node subprocess
 * (`llama_driver.mjs`, JSON lines over stdin/stdout). The checkpoint is converted to GGUF F16
 * (or its own dtype) once and cached. `gpu: "vulkan"` offloads every layer to ggml-vulkan,
 * `false` runs ggml's CPU backend.
 */
import type { Peer } from "./peer.ts";
import { ensurePeerDeps, peersDir } from "./deps.ts";
import { cached, cacheDir, sourceHash } from "./read_checkpoint.ts";
import { toGguf } from "./to_gguf.ts";

type Reply = { ok?: unknown; error?: string };

class Driver {
  #child: Deno.ChildProcess;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #lines: AsyncIterator<string>;
  #queue: Promise<unknown> = Promise.resolve();
  /** The process ended (its stdout closed). */
  exited = false;

  constructor(env: Record<string, string>) {
    this.#child = new Deno.Command("node", {
      args: [`${peersDir}llama_driver.mjs`],
      cwd: peersDir,
      env,
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    this.#lines = lines(this.#child.stdout)[Symbol.asyncIterator]();
  }

  /** One request, one reply; requests are serialised. */
  call<R>(req: Record<string, unknown>): Promise<R> {
    const run = async () => {
      await this.#writer.write(
        new TextEncoder().encode(JSON.stringify(req) + "\n"),
      );
      const next = await this.#lines.next();
      if (next.done) {
        this.exited = true;
        throw new Error(`llama.cpp driver exited during ${req.op}`);
      }
      const reply = JSON.parse(next.value) as Reply;
      if (reply.error !== undefined) {
        throw new Error(`llama.cpp ${req.op}: ${reply.error}`);
      }
      return reply.ok as R;
    };
    const p = this.#queue.then(run, run);
    this.#queue = p.catch(() => {});
    return p;
  }

  async close(): Promise<void> {
    try {
      await this.call({ op: "close" });
      await this.#writer.close();
    } catch {
      try {
        this.#child.kill();
      } catch {
        // already exited
      }
    }
    await this.#child.status;
  }
}

async function* lines(
  stream: ReadableStream<Uint8Array>,
): AsyncIterable<string> {
  let buf = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      yield buf.slice(0, nl);
      buf = buf.slice(nl + 1);
    }
  }
}

/** The GGUF copy of a checkpoint folder, converted on first use. */
export async function ggufFor(modelDir: string): Promise<string> {
  const dir = await cacheDir(modelDir);
  const version = await sourceHash([
    new URL("./to_gguf.ts", import.meta.url),
    new URL("../../src/convert/convert.ts", import.meta.url),
    new URL("../../src/convert/tokenizer_meta.ts", import.meta.url),
    new URL("../../src/convert/writer.ts", import.meta.url),
  ]);
  return await cached(
    `${dir}/model-${version}.gguf`,
    (tmp) => toGguf(modelDir, tmp),
  );
}

/**
 * llama.cpp's greedy continuation of `promptIds` (`n` tokens) on the GGUF file `file`, on its
 * CPU build, in a driver process of its own (started and closed here).
 */
export async function llamaCppGreedy(
  file: string,
  promptIds: number[],
  n: number,
): Promise<number[]> {
  return (await llamaCppGreedyEach([file], promptIds, n))[0]!;
}

/** `llamaCppGreedy` on each file in turn, in one driver process (one backend start). */
export async function llamaCppGreedyEach(
  files: readonly string[],
  promptIds: number[],
  n: number,
): Promise<number[][]> {
  await ensurePeerDeps();
  const driver = new Driver({});
  try {
    const out: number[][] = [];
    for (const file of files) {
      await driver.call({ op: "setup", model: file, gpu: false });
      out.push(
        (await driver.call<{ tokens: number[] }>({
          op: "greedy",
          ids: promptIds,
          n,
        })).tokens,
      );
    }
    return out;
  } finally {
    await driver.close();
  }
}

/**
 * llama.cpp's teacher-forced logits for `promptIds` on each file (CPU build): one row per
 * position, the logits after that prefix, for the whole vocabulary. `f32`: an F32 KV cache and
 * no flash attention (llama.cpp's default context keeps K and V in F16). `contextSize`: the
 * context llama.cpp is given (default: the prompt's, rounded up to 256).
 */
export async function llamaCppLogitsEach(
  files: readonly string[],
  promptIds: number[],
  vocab: number,
  { f32 = false, contextSize }: { f32?: boolean; contextSize?: number } = {},
): Promise<number[][][]> {
  await ensurePeerDeps();
  const driver = new Driver({});
  try {
    const out: number[][][] = [];
    for (const file of files) {
      await driver.call({ op: "setup", model: file, gpu: false });
      out.push(
        (await driver.call<{ logits: number[][] }>({
          op: "logits",
          ids: promptIds,
          vocab,
          f32,
          contextSize,
        })).logits,
      );
    }
    return out;
  } finally {
    await driver.close();
  }
}

/** llama.cpp's tokenization of each text (no BOS) with the tokenizer stored in `file`. */
export async function llamaCppTokenize(
  file: string,
  texts: readonly string[],
): Promise<number[][]> {
  await ensurePeerDeps();
  const driver = new Driver({});
  try {
    await driver.call({ op: "setup", model: file, gpu: false });
    const out: number[][] = [];
    for (const text of texts) {
      out.push(
        (await driver.call<{ tokens: number[] }>({ op: "tokenize", text }))
          .tokens,
      );
    }
    return out;
  } finally {
    await driver.close();
  }
}

export class LlamaCppPeer implements Peer {
  #driver: Driver | undefined;
  #gguf = "";
  /** The device llama.cpp reports (after setup). */
  device = "";
  /** Threads for each context (undefined: node-llama-cpp's default, the math cores). */
  #threads: number | undefined;
  /** CPU build only: the thread count the bench sweeps (`Peer.setThreads`). */
  setThreads?: (n: number) => Promise<void>;

  constructor(readonly name: string, readonly gpu: "vulkan" | false) {
    if (gpu === false) {
      this.setThreads = (n) => {
        if (!Number.isInteger(n) || n < 1) {
          return Promise.reject(
            new RangeError(`${name}: threads must be a positive integer`),
          );
        }
        this.#threads = n;
        return Promise.resolve();
      };
    }
  }

  /** The request with this peer's thread count, when one was set. */
  #withThreads(req: Record<string, unknown>): Record<string, unknown> {
    return this.#threads === undefined ? req : { ...req, threads: this.#threads };
  }

  async setup(modelDir: string): Promise<string | undefined> {
    try {
      await ensurePeerDeps();
    } catch (e) {
      return `npm packages not installable: ${(e as Error).message.split("\n")[0]}`;
    }
    if (!(await hasNode())) {
      return "node is not on PATH (node-llama-cpp runs in Node)";
    }
    let gguf: string;
    try {
      // A GGUF file is run as it is (the same file Kiln runs); a folder is converted once.
      gguf = modelDir.endsWith(".gguf") ? modelDir : await ggufFor(modelDir);
    } catch (e) {
      return `GGUF conversion failed: ${(e as Error).message}`;
    }
    this.#gguf = gguf;
    try {
      await this.#start();
      return undefined;
    } catch (e) {
      await this.close();
      return (e as Error).message.split("\n")[0];
    }
  }

  /** A driver process with the model loaded. */
  async #start(): Promise<Driver> {
    // ggml-vulkan skips CPU Vulkan devices (lavapipe) unless a device is named explicitly.
    const env: Record<string, string> = {};
    if (Deno.env.get("GGML_VK_VISIBLE_DEVICES") === undefined) {
      env.GGML_VK_VISIBLE_DEVICES = "0";
    }
    const driver = new Driver(env);
    this.#driver = driver;
    const info = await driver.call<{ device: string }>({
      op: "setup",
      model: this.#gguf,
      gpu: this.gpu,
    });
    this.device = info.device;
    return driver;
  }

  /**
   * One request. If the driver process died (node-llama-cpp's Vulkan build on lavapipe now and
   * then aborts with heap corruption when contexts of several sequences come and go), start a
   * new one and retry once; a second death is an error.
   */
  async #call<R>(req: Record<string, unknown>): Promise<R> {
    const driver = this.#driver;
    if (!driver) throw new Error(`${this.name}: setup() has not succeeded`);
    try {
      return await driver.call<R>(req);
    } catch (e) {
      if (!driver.exited) throw e;
      console.error(
        `${this.name}: the driver died during ${req.op}; restarting it once`,
      );
      await driver.close();
      return await (await this.#start()).call<R>(req);
    }
  }

  async greedy(promptIds: number[], n: number): Promise<number[]> {
    const r = await this.#call<{ tokens: number[] }>(
      this.#withThreads({ op: "greedy", ids: promptIds, n }),
    );
    return r.tokens;
  }

  decode(
    promptIds: number[],
    n: number,
    batch: number,
  ): Promise<{ tokens: number; seconds: number }> {
    return this.#call(
      this.#withThreads({ op: "decode", ids: promptIds, n, batch }),
    );
  }

  prefill(promptIds: number[]): Promise<{ seconds: number }> {
    return this.#call(this.#withThreads({ op: "prefill", ids: promptIds }));
  }

  async close(): Promise<void> {
    const d = this.#driver;
    this.#driver = undefined;
    await d?.close();
  }
}

async function hasNode(): Promise<boolean> {
  try {
    return (await new Deno.Command("node", {
      args: ["--version"],
      stdout: "null",
    }).output()).success;
  } catch {
    return false;
  }
}
