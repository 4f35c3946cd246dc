/**
 * For tests of usage and request metrics: an `LLMEngine` that streams a scripted text, tokenized
 * with the model's tokenizer, `chunk` tokens per output chunk (as a speculative or pipelined
 * engine may), and ends as the plan says: EOS after the text; `length` at `max_tokens` (the cut
 * chunk carrying the last tokens); `hold` (after `at` tokens, wait for the request's cancel, then
 * `cancelled`); or `error` (after `at` tokens, a chunk whose finish reason is Dynamo's error). It
 * records every token it handed out per request (`delivered`), the count a test compares usage
 * and metrics with. Guided requests are accepted (the script is what the guide would allow).
 */
import type { GenerateContext, LLMEngine } from "../../src/contract/engine.ts";
import * as out from "../../src/contract/output.ts";
import type {
  EngineConfig,
  LLMEngineOutput,
  PreprocessedRequest,
} from "../../src/contract/types.ts";
import type { TextTokenizer } from "../../src/text/tokenizer.ts";

/** How a scripted reply ends. */
export type Ending =
  | { kind: "eos" }
  | { kind: "hold"; at: number }
  | { kind: "error"; at: number };

/** A scripted reply: its text and how it ends. */
export interface Plan {
  text: string;
  end: Ending;
}

export class ChunkedEngine implements LLMEngine {
  /** The plan of the next requests. */
  plan: Plan = { text: "", end: { kind: "eos" } };
  /** What every `generate` call asked for, in order. */
  readonly requests: PreprocessedRequest[] = [];
  /** The token ids each request was handed, in the order of `requests`. */
  readonly delivered: number[][] = [];
  #ended: (() => void)[] = [];
  #holding: (() => void)[] = [];

  constructor(readonly tokenizer: TextTokenizer, readonly chunk: number) {}

  start(_workerId: bigint): Promise<EngineConfig> {
    return Promise.resolve({ model: "fortune", context_length: 4096 });
  }

  /** Resolves once the last request's generator has ended (finished, cancelled or closed). */
  ended(): Promise<void> {
    return new Promise((r) => this.#ended.push(r));
  }

  /** Resolves once the last request holds (a `hold` plan reached its `at` tokens). */
  holding(): Promise<void> {
    return new Promise((r) => this.#holding.push(r));
  }

  async *generate(
    request: PreprocessedRequest,
    ctx: GenerateContext,
  ): AsyncGenerator<LLMEngineOutput> {
    this.requests.push(request);
    const sent: number[] = [];
    this.delivered.push(sent);
    const { text, end } = this.plan;
    try {
      const ids = this.tokenizer.encode(text, { addSpecial: false });
      const max = request.stop_conditions.max_tokens ?? Infinity;
      const stopAt = end.kind === "eos" ? ids.length : end.at;
      for (let n = 0; n < Math.min(stopAt, max);) {
        await Promise.resolve();
        if (ctx.signal.aborted) return yield out.cancelled();
        const take = ids.slice(n, Math.min(n + this.chunk, stopAt, max));
        n += take.length;
        if (sent.length === 0) ctx.notifyFirstToken();
        sent.push(...take);
        const cut = n >= max && n < stopAt;
        yield cut ? out.withTokens(out.length(), take) : out.withTokens(out.token(0), take);
        if (cut) return;
      }
      if (end.kind === "hold") {
        for (const r of this.#holding.splice(0)) r();
        await new Promise<void>((r) => {
          if (ctx.signal.aborted) r();
          else ctx.signal.addEventListener("abort", () => r(), { once: true });
        });
        return yield out.cancelled();
      }
      yield end.kind === "error" ? out.error("Unknown: the scripted engine failed") : out.eos();
    } finally {
      for (const r of this.#ended.splice(0)) r();
    }
  }

  cleanup(): Promise<void> {
    return Promise.resolve();
  }
}
