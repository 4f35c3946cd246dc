/**
 * Guided decoding in Kiln's engines: Dynamo's `guided_decoding` (JSON Schema, regex, choice,
 * EBNF grammar) as token bitmasks, by XGrammar. See `docs/guided_decoding.md`.
 */
import { EngineError } from "../../contract/errors.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import type { ModelFiles } from "../../formats/source.ts";
import type { Sequence } from "../sequence.ts";
import type { TokenMaskProvider } from "../token_mask.ts";
import type { Guides } from "./guides.ts";
import type { GuidedLimits } from "./limits.ts";
// Evaluated with the engine's module, before any library can replace the realm's `Worker`.
import "./grammar_worker_module.ts";

export type { Guides } from "./guides.ts";
export type { GuidedLimits } from "./limits.ts";
export type { GuideSpec } from "./options.ts";

const FIELD = "request.sampling_options.guided_decoding";

/** An engine's guides over `files`' tokenizer, made on first use. */
export class EngineGuides {
  #guides: Promise<Guides> | undefined;
  #closed = false;
  /** `limits`: the engine's `guidedLimits` (time and size budgets; see `limits.ts`). */
  constructor(
    readonly files: ModelFiles,
    readonly vocab: number,
    readonly limits: GuidedLimits = {},
  ) {}

  /**
   * The provider constraining `request`: `given` (a caller's own), or its `guided_decoding`
   * compiled; both at once is `InvalidArgument`.
   */
  async guide(
    request: PreprocessedRequest,
    given?: TokenMaskProvider,
  ): Promise<TokenMaskProvider | undefined> {
    const g = request.sampling_options.guided_decoding;
    if (g === undefined || g === null) return given;
    if (given !== undefined) {
      throw EngineError.invalidField(FIELD, "a token mask provider was given too; give one");
    }
    // The grammar side (and XGrammar, and the tokenizer) is loaded on the first guided request
    // only: an engine that never constrains never loads it.
    if (this.#closed) throw EngineError.shutdown("guided decoding after the engine's cleanup");
    this.#guides ??= import("./guides.ts").then(({ Guides }) =>
      new Guides(
        async () => {
          const { loadText } = await import("../../text/load.ts");
          return (await loadText(this.files)).tokenizer;
        },
        this.vocab,
        undefined,
        this.limits,
      )
    );
    return await (await this.#guides).guide(request);
  }

  /** End the grammar worker, if one was started (the engine's `cleanup`). */
  close(): void {
    this.#closed = true;
    void this.#guides?.then((g) => g.close());
  }

  /**
   * The sequence `make` builds for `request`, guided by `given` or its `guided_decoding`
   * compiled, its first mask made (before the request is queued). A request with neither is
   * built at once, without a wait; after one, `state()` must still be `running` or `draining`,
   * else `EngineShutdown`.
   */
  sequence(
    request: PreprocessedRequest,
    given: TokenMaskProvider | undefined,
    make: (guide: TokenMaskProvider | undefined) => Sequence,
    state: () => string,
  ): Sequence | Promise<Sequence> {
    const g = request.sampling_options.guided_decoding;
    if ((g === undefined || g === null) && given?.prepare === undefined) return make(given);
    return (async () => {
      const seq = make(await this.guide(request, given));
      await seq.prepareMask();
      const now = state();
      if (now !== "running" && now !== "draining") {
        seq.cancel();
        throw EngineError.shutdown(`generate() on a ${now} engine`);
      }
      return seq;
    })();
  }
}
