/**
 * Reference files in the shared fixtures' `reference.json` format, computed by the float64
 * {@linkcode ReferenceModel}: what `deno task reference` writes and `deno task verify` reads.
 */
import { EngineError } from "../contract/errors.ts";
import type { ModelConfig } from "../model/config.ts";
import type { ReferenceModel } from "./model.ts";
import type { Reference, ReferencePrompt } from "./verify.ts";
import { type ModelWeights, type WeightInfo, weightList } from "../model/weights.ts";

export const COMPUTED_IN = "float64, Kiln reference_model.ts, dequantized weights";

/** A whole reference file, every field the fixtures carry. */
export interface ReferenceFile extends Reference {
  name: string;
  arch: string;
  dtype: string;
  vocab_size: number;
  computed_in: string;
  prompts: ReferencePrompt[];
}

const TORCH_NAMES: Record<string, string> = { f32: "float32", f16: "float16", bf16: "bfloat16" };

/**
 * The weights' dtype as the fixtures name it (`float16`); a model of several (a GGUF's quantized
 * matrices and F32 norms) joins them by bytes held, largest first (`Q4_K+Q6_K+float32`).
 */
export function weightsDtype(weights: ModelWeights<WeightInfo>): string {
  const bytes = new Map<string, number>();
  for (const t of weightList(weights)) {
    const name = TORCH_NAMES[t.dtype] ?? t.dtype;
    bytes.set(name, (bytes.get(name) ?? 0) + t.length);
  }
  return [...bytes].sort((a, b) => b[1] - a[1]).map(([n]) => n).join("+");
}

/**
 * `count` prompts of 5 to 9 tokens drawn from the vocabulary by a fixed seed (the same prompts
 * for the same config): BOS first when the model has one, never an EOS token.
 */
export function seededPrompts(config: ModelConfig, count = 3, seed = 0x6b696c6e): number[][] {
  let state = seed >>> 0;
  const next = () => {
    // mulberry32
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const banned = new Set(config.eosTokenIds);
  if (config.bosTokenId !== undefined) banned.add(config.bosTokenId);
  if (banned.size >= config.vocabSize) {
    throw EngineError.invalidArgument("seeded prompts: every token is BOS or EOS");
  }
  const prompts: number[][] = [];
  for (let p = 0; p < count; p++) {
    const length = 5 + Math.floor(next() * 5);
    const ids = config.bosTokenId !== undefined ? [config.bosTokenId] : [];
    while (ids.length < length) {
      const id = Math.floor(next() * config.vocabSize);
      if (!banned.has(id)) ids.push(id);
    }
    prompts.push(ids);
  }
  return prompts;
}

/** Compute every prompt's logits and `steps` greedy steps; `onPrompt` hears each as it ends. */
export function buildReference(
  model: ReferenceModel,
  weights: ModelWeights<WeightInfo>,
  name: string,
  prompts: readonly (readonly number[])[],
  steps: number,
  onPrompt?: (index: number, prompt: ReferencePrompt) => void,
): ReferenceFile {
  const out: ReferencePrompt[] = [];
  for (const [i, ids] of prompts.entries()) {
    const p = model.prompt(ids, steps);
    out.push(p);
    onPrompt?.(i, p);
  }
  return {
    name,
    arch: model.config.arch,
    dtype: weightsDtype(weights),
    vocab_size: model.config.vocabSize,
    computed_in: COMPUTED_IN,
    prompts: out,
  };
}

/** The parts of a family fixture's `manifest.json` (`test/fixtures/families/`) a reference needs. */
interface LogitsManifest {
  tokens: number[];
  logits: { file: string; shape: [number, number] };
  float64_reference?: { max_abs_error?: number };
  family?: string;
}

/**
 * Whether `json` is a logits manifest (llama.cpp's teacher-forced logits in a raw f32 file beside
 * it, as the family fixtures carry) rather than a `reference.json`.
 */
export function isLogitsManifest(json: unknown): boolean {
  const m = json as Partial<LogitsManifest> | null;
  return typeof m?.logits === "object" && typeof m.logits?.file === "string";
}

/**
 * A reference from a logits manifest and its logits file (row-major little-endian f32,
 * `[positions, vocab]`): one prompt, the manifest's tokens, teacher-forced logits at every
 * position, no greedy steps; `reference_error` is the manifest's own float64 check of those
 * logits (how far llama.cpp is from exact arithmetic on the same weights).
 */
export function logitsManifestReference(json: unknown, logits: Uint8Array): Reference {
  const m = json as LogitsManifest;
  const [rows, vocab] = m.logits.shape ?? [];
  const ok = Array.isArray(m.tokens) && m.tokens.every((t) => Number.isInteger(t) && t >= 0) &&
    Number.isInteger(rows) && Number.isInteger(vocab) && rows === m.tokens.length && vocab! > 0;
  if (!ok) {
    throw EngineError.invalidArgument(
      "logits manifest: tokens must be ids and logits.shape [tokens, vocab]",
    );
  }
  if (logits.byteLength !== rows! * vocab! * 4) {
    throw EngineError.invalidArgument(
      `logits manifest: ${m.logits.file} holds ${logits.byteLength} bytes, [${rows}, ${vocab}] f32 needs ${
        rows! * vocab! * 4
      }`,
    );
  }
  const view = new DataView(logits.buffer, logits.byteOffset, logits.byteLength);
  const rowsOut: number[][] = [];
  for (let r = 0; r < rows!; r++) {
    rowsOut.push(
      Array.from({ length: vocab! }, (_, i) => view.getFloat32((r * vocab! + i) * 4, true)),
    );
  }
  return {
    ...(m.family ? { name: m.family } : {}),
    vocab_size: vocab!,
    prompts: [{
      input_ids: m.tokens,
      logits: rowsOut,
      greedy_tokens: [],
      greedy_margins: [],
      greedy_step_logits: [],
    }],
    reference_error: m.float64_reference?.max_abs_error ?? 0,
  };
}
