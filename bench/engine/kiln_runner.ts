/**
 * Kiln's `WebGpuEngine` behind the same calls a peer answers (`peers/peer.ts`), so the
 * benchmark times Kiln and its peers the same way: greedy tokens, decode throughput over
 * `batch` concurrent streams (first generated token to last), and time to first token.
 * `EngineRunner` does that for any `LLMEngine` (`ort_runner.ts`: onnxruntime-web's engine).
 */
import { type LLMEngine, RequestContext } from "../../src/contract/engine.ts";
import type { EngineConfig, PreprocessedRequest } from "../../src/contract/types.ts";
import type { Gpu } from "../../src/gpu/device.ts";
import { WebGpuEngine } from "../../src/engines/webgpu/engine.ts";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import type { Peer } from "../../tools/peers/peer.ts";
import type { SpeculativeOptions } from "../../src/engines/speculation.ts";

export interface KilnRunnerOptions {
  gpu: Gpu;
  /** KV cache positions to allocate (the bench caps the context this way). */
  kvPositions: number;
  maxNumSeqs: number;
  maxNumBatchedTokens?: number;
  /** Decode steps in flight, fixed (default: the engine adapts it). */
  pipelineDepth?: number;
  /** Guided decoding's forced stretches (default: the engine's, `"chunk"`). */
  guidedForcing?: "chunk" | "off";
  /** Speculative decoding (default: off). */
  speculative?: SpeculativeOptions;
}

export interface StreamTiming {
  tokens: number;
  /**
   * Tokens after each stream's first chunk: those `seconds` covers. A stream's first chunk holds
   * one token, or a guided stream's whole forced stretch (several, at once).
   */
  timed: number;
  /** From the request to the first token. */
  ttft: number;
  /** From the first generated token (any stream) to the last. */
  seconds: number;
  /** Greedy tokens of the first stream. */
  ids: number[];
  /** Every stream's tokens, in prompt order. */
  streams?: number[][];
}

/** Times any started `LLMEngine` through the `Peer` calls; subclasses load it in `setup`. */
export abstract class EngineRunner<E extends LLMEngine> implements Peer {
  abstract readonly name: string;
  engine: E | undefined;
  config: EngineConfig | undefined;

  abstract setup(modelDir: string): Promise<string | undefined>;

  /**
   * `prompts.length` concurrent greedy streams of `n` tokens each, constrained by `guided`
   * (`sampling_options.guided_decoding`) when given; `sampled` draws them instead, stream i
   * with seed `sampled.seed + i`.
   */
  async run(
    prompts: number[][],
    n: number,
    guided?: Record<string, unknown>,
    sampled?: { temperature: number; seed: number },
  ): Promise<StreamTiming> {
    const engine = this.engine, config = this.config;
    if (!engine || !config) throw new Error(`${this.name}: setup() first`);
    const request = (ids: number[], i: number): PreprocessedRequest => ({
      model: config.model,
      token_ids: ids,
      stop_conditions: { max_tokens: n, ignore_eos: true },
      sampling_options: {
        temperature: 0,
        ...(guided ? { guided_decoding: guided } : {}),
        ...(sampled ? { temperature: sampled.temperature, seed: sampled.seed + i } : {}),
      },
      output_options: {},
      eos_token_ids: [],
      annotations: [],
    });
    let first = Infinity, last = 0, count = 0, timed = 0;
    const streams: number[][] = prompts.map(() => []);
    const t0 = performance.now();
    await Promise.all(prompts.map(async (p, i) => {
      let started = false;
      for await (const c of engine.generate(request(p, i), new RequestContext())) {
        const now = performance.now();
        if (c.token_ids.length > 0) {
          first = Math.min(first, now);
          last = Math.max(last, now);
          if (started) timed += c.token_ids.length;
          started = true;
        }
        count += c.token_ids.length;
        streams[i]!.push(...c.token_ids);
      }
    }));
    return {
      tokens: count,
      timed,
      ttft: (first - t0) / 1000,
      seconds: (last - first) / 1000,
      ids: streams[0] ?? [],
      streams,
    };
  }

  async greedy(promptIds: number[], n: number): Promise<number[]> {
    return (await this.run([promptIds], n)).ids;
  }

  async decode(
    promptIds: number[],
    n: number,
    batch: number,
  ): Promise<{ tokens: number; seconds: number }> {
    const r = await this.run(Array.from({ length: batch }, () => promptIds), n);
    return { tokens: r.timed, seconds: r.seconds };
  }

  async prefill(promptIds: number[]): Promise<{ seconds: number }> {
    return { seconds: (await this.run([promptIds], 1)).ttft };
  }

  async close(): Promise<void> {
    await this.engine?.cleanup();
    this.engine = undefined;
  }
}

export class KilnRunner extends EngineRunner<WebGpuEngine> {
  readonly name = "kiln";

  constructor(readonly options: KilnRunnerOptions) {
    super();
  }

  async setup(modelDir: string): Promise<string | undefined> {
    const o = this.options;
    const blockSize = 16;
    this.engine = new WebGpuEngine({
      files: dirFiles(modelDir),
      name: modelDir,
      gpu: o.gpu,
      blockSize,
      kvBlocks: Math.ceil(o.kvPositions / blockSize),
      maxNumSeqs: o.maxNumSeqs,
      ...(o.maxNumBatchedTokens === undefined
        ? {}
        : { maxNumBatchedTokens: o.maxNumBatchedTokens }),
      ...(o.pipelineDepth === undefined ? {} : { pipelineDepth: o.pipelineDepth }),
      ...(o.guidedForcing === undefined ? {} : { guidedForcing: o.guidedForcing }),
      ...(o.speculative === undefined ? {} : { speculative: o.speculative }),
    });
    this.config = await this.engine.start(0n);
    return undefined;
  }

  /** Steps the engine kept in flight at most so far. */
  get maxInFlight(): number {
    return this.engine?.steps.maxInFlight ?? 0;
  }
}

/**
 * A deterministic prompt of `length` token ids below `vocab` (ids from 3 up, skipping the low
 * ids where special tokens usually sit); different `salt`s share no leading token, so the
 * engine's prefix cache never serves one prompt's blocks to another.
 */
export function prompt(length: number, vocab: number, salt: number): number[] {
  const span = Math.min(vocab, 32000) - 3;
  let s = (salt * 0x9e3779b9) >>> 0;
  const out = [3 + (salt % span)];
  while (out.length < length) {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    out.push(3 + (s % span));
  }
  return out;
}
