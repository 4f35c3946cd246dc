/**
 * Opening an ONNX decoder export with onnxruntime-web: which variant, its bytes (and external
 * data), the session on the WebGPU or wasm execution provider, and the checks that the graph
 * follows the transformers.js layout (`input_ids`, `attention_mask`, `position_ids`,
 * `past_key_values.{i}.key/.value` in; `logits`, `present.{i}.key/.value` out). Every failure
 * is an `InvalidArgument` naming the file, the input or the op.
 */
import type * as Ort from "onnxruntime-web";
import { describe } from "../../contract/describe.ts";
import { EngineError } from "../../contract/errors.ts";
import { htmlPage, looksLikeHtml } from "../../formats/html.ts";
import { missingFile, type ModelFiles, requireText } from "../../formats/source.ts";
import { GpuRowSampler } from "./sampling.ts";

export type OrtModule = typeof Ort;
/** onnxruntime-web's execution provider: WebGPU, or the CPU (WebAssembly, one thread). */
export type ExecutionProvider = "webgpu" | "wasm";

/** Variant names transformers.js exports use, in the order "the first present" takes them. */
export const VARIANTS = [
  "model",
  "model_fp16",
  "model_q4f16",
  "model_quantized",
  "model_q4",
  "model_int8",
  "model_uint8",
  "model_bnb4",
  "decoder_model_merged",
  "decoder_model_merged_fp16",
  "decoder_model_merged_quantized",
] as const;

/** The layout the engine drives, read from the session and `config.json`. */
export interface Layout {
  layers: number;
  kvHeads: number;
  headDim: number;
  vocab: number;
  context: number;
  /** Element type of the past/present tensors. */
  kvType: "float32" | "float16";
  eosTokenIds: number[];
}

export interface OpenedSession {
  session: Ort.InferenceSession;
  layout: Layout;
  variant: string;
  /** The .onnx file's name as opened (for messages). */
  file: string;
}

let ortModule: Promise<OrtModule> | undefined;

/** onnxruntime-web (its WebGPU build, which also has the wasm EP), loaded once. */
export function loadOrt(wasmPaths?: string): Promise<OrtModule> {
  ortModule ??= import("onnxruntime-web/webgpu").then((ort) => {
    ort.env.wasm.numThreads = 1;
    ort.env.logLevel = "error";
    return ort as unknown as OrtModule;
  });
  return ortModule.then((ort) => {
    if (wasmPaths !== undefined) ort.env.wasm.wasmPaths = wasmPaths;
    return ort;
  });
}

/** Where `<variant>.onnx` lies in `files`: under `onnx/`, or at the top (picked files). */
async function findModel(files: ModelFiles, variant: string): Promise<string | undefined> {
  for (const name of [`onnx/${variant}.onnx`, `${variant}.onnx`]) {
    if (await files.open(name) !== undefined) return name;
  }
  return undefined;
}

/** Whether `files` hold an ONNX export (an `onnx/*.onnx` or a top-level `*.onnx`). */
export async function isOnnxExport(files: ModelFiles): Promise<boolean> {
  if (files.gguf !== undefined) return false;
  for (const v of VARIANTS) if (await findModel(files, v) !== undefined) return true;
  return false;
}

/** The variant to run: the one asked for, else fp16 where the GPU has shader-f16, else f32. */
export async function pickVariant(
  files: ModelFiles,
  requested: string | undefined,
  preferF16: boolean,
): Promise<{ variant: string; file: string }> {
  if (requested !== undefined) {
    const file = await findModel(files, requested);
    if (file === undefined) throw missingFile(files, `onnx/${requested}.onnx`);
    return { variant: requested, file };
  }
  const order = preferF16 ? ["model_fp16", ...VARIANTS] : [...VARIANTS];
  for (const variant of order) {
    const file = await findModel(files, variant);
    if (file !== undefined) return { variant, file };
  }
  throw missingFile(files, "onnx/model.onnx");
}

/**
 * A whole file. Absent, or an HTML page in its place (an SPA fallback for a missing file): an
 * `InvalidArgument` saying which when `required`, else undefined.
 */
async function readAll(
  files: ModelFiles,
  name: string,
  required: boolean,
): Promise<Uint8Array | undefined> {
  const src = await files.open(name);
  if (src === undefined) {
    if (required) throw missingFile(files, name);
    return undefined;
  }
  const bytes = await src.read(0, src.size);
  if (!looksLikeHtml(bytes)) return bytes;
  if (required) throw htmlPage(src.name);
  return undefined;
}

/** An ORT session-creation failure as a typed error naming the file, or the op it lacks. */
export function sessionError(file: string, ep: ExecutionProvider, e: unknown): EngineError {
  if (e instanceof EngineError) return e;
  const text = e instanceof Error ? e.message : describe(e, 500);
  const op = /implementation for (\S+?)\(/.exec(text)?.[1] ??
    /No Op registered for (\S+)/.exec(text)?.[1] ??
    /[Uu]nsupported (?:op|operator|node)[^A-Za-z0-9]*([A-Za-z0-9_.]+)/.exec(text)?.[1];
  if (op !== undefined) {
    return EngineError.invalidArgument(
      `${file}: op ${op} is not supported by onnxruntime-web's ${ep} execution provider (${text})`,
      e,
    );
  }
  return EngineError.invalidArgument(`${file}: onnxruntime-web cannot load it: ${text}`, e);
}

function num(v: unknown): number | undefined {
  return typeof v === "number" && Number.isInteger(v) && v > 0 ? v : undefined;
}

/** Check the session's inputs and outputs against the layout and read its sizes. */
export function checkLayout(
  session: Ort.InferenceSession,
  file: string,
  config: Record<string, unknown>,
): Layout {
  const inputs = new Map(session.inputMetadata.map((m) => [m.name, m]));
  const outputs = new Set(session.outputNames);
  for (const name of ["input_ids", "attention_mask", "position_ids"]) {
    if (!inputs.has(name)) {
      throw EngineError.invalidArgument(`${file}: the graph has no input ${name}`);
    }
  }
  if (!outputs.has("logits")) {
    throw EngineError.invalidArgument(`${file}: the graph has no output logits`);
  }
  let layers = 0;
  for (const name of inputs.keys()) {
    const m = /^past_key_values\.(\d+)\.(key|value)$/.exec(name);
    if (m) layers = Math.max(layers, Number(m[1]) + 1);
  }
  const declared = num(config.num_hidden_layers);
  if (declared !== undefined) layers = Math.max(layers, declared);
  if (layers === 0) {
    throw EngineError.invalidArgument(`${file}: the graph has no input past_key_values.0.key`);
  }
  for (let i = 0; i < layers; i++) {
    for (const kind of ["key", "value"]) {
      if (!inputs.has(`past_key_values.${i}.${kind}`)) {
        throw EngineError.invalidArgument(
          `${file}: the graph has no input past_key_values.${i}.${kind}`,
        );
      }
      if (!outputs.has(`present.${i}.${kind}`)) {
        throw EngineError.invalidArgument(`${file}: the graph has no output present.${i}.${kind}`);
      }
    }
  }
  const past = inputs.get("past_key_values.0.key")!;
  const shape = past.isTensor ? past.shape : [];
  const kvType = past.isTensor && past.type === "float16" ? "float16" : "float32";
  const heads = num(config.num_attention_heads);
  const kvHeads = num(shape[1]) ?? num(config.num_key_value_heads) ?? heads;
  const hidden = num(config.hidden_size);
  const headDim = num(shape[3]) ?? num(config.head_dim) ??
    (hidden !== undefined && heads !== undefined ? hidden / heads : undefined);
  const logitsMeta = session.outputMetadata.find((m) => m.name === "logits");
  const vocab = num(config.vocab_size) ?? (logitsMeta?.isTensor ? num(logitsMeta.shape[2]) : 0);
  const context = num(config.max_position_embeddings);
  const missing = [
    ["num_key_value_heads", kvHeads],
    ["head_dim", headDim],
    ["vocab_size", vocab],
    ["max_position_embeddings", context],
  ].find(([, v]) => v === undefined || !Number.isInteger(v));
  if (missing !== undefined) {
    throw EngineError.invalidArgument(`config.json: no usable ${missing[0]}`);
  }
  const eos = config.eos_token_id;
  const eosTokenIds = (Array.isArray(eos) ? eos : eos === undefined ? [] : [eos])
    .filter((t): t is number => typeof t === "number" && Number.isInteger(t) && t >= 0);
  return {
    layers,
    kvHeads: kvHeads!,
    headDim: headDim!,
    vocab: vocab!,
    context: context!,
    kvType,
    eosTokenIds,
  };
}

export interface OpenOptions {
  files: ModelFiles;
  variant?: string;
  ep: ExecutionProvider;
  preferF16: boolean;
}

/** Read the export, create the session (logits and KV kept on the GPU on WebGPU), check it. */
export async function openSession(ort: OrtModule, o: OpenOptions): Promise<OpenedSession> {
  const configText = await requireText(o.files, "config.json");
  let config: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(configText);
    if (typeof parsed !== "object" || parsed === null) throw new Error("not a JSON object");
    config = parsed as Record<string, unknown>;
  } catch (e) {
    throw EngineError.invalidArgument(`config.json: ${(e as Error).message}`, e);
  }
  const { variant, file } = await pickVariant(o.files, o.variant, o.preferF16);
  const bytes = (await readAll(o.files, file, true))!;
  const where = o.files.location.endsWith("/")
    ? `${o.files.location}${file}`
    : `${o.files.location}/${file}`;
  const options: Ort.InferenceSession.SessionOptions = {
    executionProviders: [o.ep],
    graphOptimizationLevel: "all",
    logSeverityLevel: 3, // errors only: not the note about shape ops placed on the CPU
  };
  const dataName = `${variant}.onnx_data`;
  const data = await readAll(o.files, file.replace(/\.onnx$/, ".onnx_data"), false);
  if (data !== undefined) options.externalData = [{ path: dataName, data }];
  // Logits and every present.* stay on ORT's device as GPU buffers.
  if (o.ep === "webgpu") options.preferredOutputLocation = "gpu-buffer";
  let session: Ort.InferenceSession;
  try {
    session = await ort.InferenceSession.create(bytes, options);
  } catch (e) {
    throw sessionError(where, o.ep, e);
  }
  try {
    return { session, layout: checkLayout(session, where, config), variant, file: where };
  } catch (e) {
    await session.release();
    throw e;
  }
}

function hasWebGpu(): boolean {
  return typeof navigator !== "undefined" && "gpu" in navigator && navigator.gpu !== undefined;
}

/**
 * The execution provider `requested` names (default: `webgpu` where `navigator.gpu` exists, else
 * `wasm`); `InvalidArgument` for any other value, or `webgpu` without `navigator.gpu`.
 */
export function chooseEp(requested: string | undefined): ExecutionProvider {
  const ep = requested ?? (hasWebGpu() ? "webgpu" : "wasm");
  if (ep !== "webgpu" && ep !== "wasm") {
    throw EngineError.invalidArgument(`executionProvider: ${ep} is not webgpu or wasm`);
  }
  if (ep === "webgpu" && !hasWebGpu()) {
    throw EngineError.invalidArgument("executionProvider webgpu: no navigator.gpu here");
  }
  return ep;
}

/** Whether the WebGPU adapter has `shader-f16` (false where there is none, or it fails). */
export async function adapterHasF16(): Promise<boolean> {
  try {
    return (await navigator.gpu.requestAdapter())?.features.has("shader-f16") ?? false;
  } catch {
    return false;
  }
}

/** The adapter behind `device` in a few words (vendor, architecture, device), for `runtime_data`. */
export function describeAdapter(device: GPUDevice): string {
  const info = (device as GPUDevice & { adapterInfo?: GPUAdapterInfo }).adapterInfo;
  return info ? [info.vendor, info.architecture, info.device].filter(Boolean).join(" ") : "";
}

/**
 * WebGPU EP: the device ORT created for its sessions, and Kiln's sampler on it (an app-created
 * device is not reliably honoured by onnxruntime-web), its pipelines compiled now rather than in
 * the first request (ORT's own kernels still compile at the session's first run).
 */
export async function samplerOnOrtDevice(
  ort: OrtModule,
  vocab: number,
): Promise<{ device: GPUDevice; gpu: GpuRowSampler }> {
  const device = await ort.env.webgpu.device as GPUDevice;
  const gpu = new GpuRowSampler(device, vocab);
  await gpu.warm().catch((e) => {
    gpu.destroy();
    throw e;
  });
  return { device, gpu };
}
