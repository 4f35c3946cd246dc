/**
 * onnxruntime-web's WebGPU execution provider in this Deno process, on the same WebGPU adapter
 * Kiln uses, running the checkpoint exported by `to_onnx.ts` (cached). The KV cache stays on
 * the GPU between steps (`present.*` outputs kept as GPU buffers and fed back as `past_*`);
 * logits come back to the CPU each step for the greedy argmax.
 */
import type * as Ort from "onnxruntime-web";
import { f16ToNumber } from "../../src/gpu/dtype.ts";
import type { Peer } from "../../tools/peers/peer.ts";
import { ensurePeerDeps } from "../../tools/peers/deps.ts";
import { cached, cacheDir, sourceHash } from "../../tools/peers/read_checkpoint.ts";

type Session = Ort.InferenceSession;
type Tensor = Ort.Tensor;

interface Shape {
  layers: number;
  kvHeads: number;
  headDim: number;
  vocab: number;
  f16: boolean;
}

/** The ONNX export of a checkpoint folder, made on first use. */
export async function onnxFor(
  modelDir: string,
  dtype: OnnxDtype = "checkpoint",
): Promise<string> {
  const dir = await cacheDir(modelDir);
  const { toOnnx } = await import("../../tools/peers/to_onnx.ts");
  const version = await sourceHash([
    new URL("../../tools/peers/to_onnx.ts", import.meta.url),
    new URL("../../tools/peers/onnx_graph.ts", import.meta.url),
  ]);
  const name = `${dir}/model-${dtype === "f32" ? "f32-" : ""}${version}.onnx`;
  return await cached(name, (tmp) => toOnnx(modelDir, tmp, { dtype }));
}

type OnnxDtype = "checkpoint" | "f32";

export interface OrtPeerOptions {
  /** Run this graph instead of exporting the checkpoint (to check a known export). */
  onnxPath?: string;
  /**
   * The export's dtype: the checkpoint's (default), or F32 weights and activations. ORT's
   * WebGPU kernels do f16 arithmetic on an f16 graph, so its greedy tokens can leave Kiln's
   * (f32 arithmetic) at margins up to ~0.1 where the f32 graph keeps to them.
   */
  dtype?: OnnxDtype;
}

export class OrtWebGpuPeer implements Peer {
  #ort: typeof Ort | undefined;
  #session: Session | undefined;
  #shape: Shape | undefined;

  constructor(
    readonly name = "onnxruntime-web",
    readonly options: OrtPeerOptions = {},
  ) {}

  async setup(modelDir: string): Promise<string | undefined> {
    if (!("gpu" in navigator) || !navigator.gpu) {
      return "no navigator.gpu in this runtime";
    }
    if (modelDir.endsWith(".gguf")) {
      return "runs an ONNX export of a safetensors folder; a GGUF has no ONNX export here";
    }
    try {
      await ensurePeerDeps(); // onnx-proto, for the export
    } catch (e) {
      return `npm packages not installable: ${(e as Error).message.split("\n")[0]}`;
    }
    let ort: typeof Ort;
    try {
      ort = await import("onnxruntime-web/webgpu");
    } catch (e) {
      return `onnxruntime-web not importable: ${(e as Error).message}`;
    }
    const dist = new URL("../../node_modules/onnxruntime-web/dist/", import.meta.url).href;
    ort.env.wasm.wasmPaths = dist;
    ort.env.wasm.numThreads = 1;
    ort.env.logLevel = "error";
    const cfg = JSON.parse(await Deno.readTextFile(`${modelDir}/config.json`));
    let path: string;
    try {
      path = this.options.onnxPath ??
        await onnxFor(modelDir, this.options.dtype);
    } catch (e) {
      return `ONNX export failed: ${(e as Error).message}`;
    }
    const bytes = await Deno.readFile(path);
    const layers = cfg.num_hidden_layers as number;
    const location: Record<string, "gpu-buffer"> = {};
    for (let i = 0; i < layers; i++) {
      location[`present.${i}.key`] = "gpu-buffer";
      location[`present.${i}.value`] = "gpu-buffer";
    }
    try {
      this.#session = await ort.InferenceSession.create(bytes, {
        executionProviders: ["webgpu"],
        graphOptimizationLevel: "all",
        preferredOutputLocation: location,
      });
    } catch (e) {
      return `session creation failed: ${(e as Error).message}`;
    }
    const input = this.#session.inputMetadata.find((m) => m.name === "past_key_values.0.key");
    const f16 = input !== undefined && input.isTensor &&
      input.type === "float16";
    this.#ort = ort;
    this.#shape = {
      layers,
      kvHeads: cfg.num_key_value_heads ?? cfg.num_attention_heads,
      headDim: cfg.head_dim ?? cfg.hidden_size / cfg.num_attention_heads,
      vocab: cfg.vocab_size,
      f16,
    };
    return undefined;
  }

  /**
   * Run `steps` greedy steps for `batch` copies of the prompt; `onToken` sees the time of each
   * step's tokens. Returns the tokens of every stream.
   */
  async #generate(
    prompt: number[],
    steps: number,
    batch: number,
    onToken?: (now: number) => void,
  ): Promise<number[][]> {
    const ort = this.#ort, session = this.#session, s = this.#shape;
    if (!ort || !session || !s) {
      throw new Error(`${this.name}: setup() has not succeeded`);
    }
    const i64 = (rows: number[][]) =>
      new ort.Tensor("int64", BigInt64Array.from(rows.flat().map(BigInt)), [
        rows.length,
        rows[0]!.length,
      ]);
    const empty = new ort.Tensor(
      s.f16 ? "float16" : "float32",
      s.f16 ? new Uint16Array(0) : new Float32Array(0),
      [batch, s.kvHeads, 0, s.headDim],
    );
    let past: Record<string, Tensor> = {};
    for (let i = 0; i < s.layers; i++) {
      past[`past_key_values.${i}.key`] = empty;
      past[`past_key_values.${i}.value`] = empty;
    }
    const out: number[][] = Array.from({ length: batch }, () => []);
    let step = Array.from({ length: batch }, () => [...prompt]);
    let done = 0;
    try {
      for (let n = 0; n < steps; n++) {
        const positions = step[0]!.map((_, i) => done + i);
        const total = done + step[0]!.length;
        const result = await session.run({
          input_ids: i64(step),
          attention_mask: i64(step.map(() => Array(total).fill(1))),
          position_ids: i64(step.map(() => positions)),
          ...past,
        });
        const logits = floats(result.logits!);
        const seq = step[0]!.length;
        const next = out.map((_, b) => argmax(logits, (b * seq + seq - 1) * s.vocab, s.vocab));
        onToken?.(performance.now());
        result.logits!.dispose();
        disposeAll(past);
        past = {};
        for (let i = 0; i < s.layers; i++) {
          past[`past_key_values.${i}.key`] = result[`present.${i}.key`]!;
          past[`past_key_values.${i}.value`] = result[`present.${i}.value`]!;
        }
        next.forEach((t, b) => out[b]!.push(t));
        done = total;
        step = next.map((t) => [t]);
      }
    } finally {
      disposeAll(past);
    }
    return out;
  }

  async greedy(promptIds: number[], n: number): Promise<number[]> {
    return (await this.#generate(promptIds, n, 1))[0]!;
  }

  async decode(
    promptIds: number[],
    n: number,
    batch: number,
  ): Promise<{ tokens: number; seconds: number }> {
    let first = 0, last = 0;
    const outs = await this.#generate(promptIds, n, batch, (now) => {
      first ||= now;
      last = now;
    });
    // Each stream's first token comes out of prefill, before the timed window.
    const tokens = outs.reduce((a, o) => a + Math.max(0, o.length - 1), 0);
    return { tokens, seconds: (last - first) / 1000 };
  }

  async prefill(promptIds: number[]): Promise<{ seconds: number }> {
    const t0 = performance.now();
    await this.#generate(promptIds, 1, 1);
    return { seconds: (performance.now() - t0) / 1000 };
  }

  async close(): Promise<void> {
    await this.#session?.release();
    this.#session = undefined;
  }
}

/** A tensor's values as float32 (float16 logits come as 16-bit patterns or a Float16Array). */
function floats(t: Tensor): Float32Array {
  if (t.type === "float32") return t.data as Float32Array;
  if (t.data instanceof Uint16Array) {
    return Float32Array.from(t.data, f16ToNumber);
  }
  return Float32Array.from(t.data as ArrayLike<number>);
}

function argmax(data: Float32Array, start: number, len: number): number {
  let best = 0;
  for (let i = 1; i < len; i++) {
    if (data[start + i]! > data[start + best]!) best = i;
  }
  return best;
}

function disposeAll(tensors: Record<string, Tensor>): void {
  for (const t of new Set(Object.values(tensors))) {
    if (t.location === "gpu-buffer") t.dispose();
  }
}
