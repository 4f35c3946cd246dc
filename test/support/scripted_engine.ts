/**
 * For tests: an `LLMEngine` whose output is a script, the text a test chooses, tokenized with the
 * model's tokenizer and streamed a token per chunk (then EOS, or `length` at `max_tokens`). It
 * records the requests it gets, so a test can check what reached the engine, and can refuse
 * `guided_decoding` as Kiln's engines do until they honour it.
 */
import type { GenerateContext, LLMEngine } from "../../src/contract/engine.ts";
import { EngineError } from "../../src/contract/errors.ts";
import * as out from "../../src/contract/output.ts";
import type {
  EngineConfig,
  LLMEngineOutput,
  PreprocessedRequest,
} from "../../src/contract/types.ts";
import type { TextTokenizer } from "../../src/text/tokenizer.ts";

export interface ScriptedEngineOptions {
  /** The reply to a request (default: the last `reply` set). */
  script?: (request: PreprocessedRequest) => string;
  /** Refuse `sampling_options.guided_decoding` with the message the WebGPU engine uses. */
  refuseGuided?: boolean;
  /** Reported as `context_length` (default 4096). */
  contextLength?: number;
}

export class ScriptedEngine implements LLMEngine {
  /** What every `generate` call asked for, in order. */
  readonly requests: PreprocessedRequest[] = [];
  /** The reply when no `script` is given. */
  reply = "";

  constructor(
    readonly model: string,
    readonly tokenizer: TextTokenizer,
    readonly options: ScriptedEngineOptions = {},
  ) {}

  start(_workerId: bigint): Promise<EngineConfig> {
    return Promise.resolve({
      model: this.model,
      context_length: this.options.contextLength ?? 4096,
    });
  }

  async *generate(
    request: PreprocessedRequest,
    ctx: GenerateContext,
  ): AsyncGenerator<LLMEngineOutput> {
    this.requests.push(request);
    if (this.options.refuseGuided && request.sampling_options.guided_decoding !== undefined) {
      throw EngineError.invalidArgument(
        "request.sampling_options.guided_decoding: structured output is not supported yet",
      );
    }
    const text = this.options.script?.(request) ?? this.reply;
    const ids = this.tokenizer.encode(text, { addSpecial: false });
    const max = request.stop_conditions.max_tokens ?? Infinity;
    const usage = (n: number) => out.usage(request.token_ids.length, n);
    for (let n = 0; n < ids.length; n++) {
      await Promise.resolve();
      if (ctx.signal.aborted) {
        yield out.withUsage(out.cancelled(), usage(n));
        return;
      }
      if (n === 0) ctx.notifyFirstToken();
      if (n + 1 >= max) {
        yield out.withUsage(out.withTokens(out.length(), [ids[n]!]), usage(n + 1));
        return;
      }
      yield out.token(ids[n]!);
    }
    yield out.withUsage(out.eos(), usage(ids.length));
  }

  cleanup(): Promise<void> {
    return Promise.resolve();
  }
}
