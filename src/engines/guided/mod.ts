/**
 * Guided decoding in Kiln's engines: Dynamo's `guided_decoding` (JSON Schema, regex, choice,
 * EBNF grammar) as token bitmasks, by XGrammar. See `docs/guided_decoding.md`.
 */
import { EngineError } from "../../contract/errors.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import type { ModelFiles } from "../../model/source.ts";
import type { TokenMaskProvider } from "../token_mask.ts";
import { Guides } from "./guides.ts";
import { FIELD } from "./options.ts";

export { Guides } from "./guides.ts";
export { type GuideSpec, parseGuided } from "./options.ts";

/** An engine's guides over `files`' tokenizer, made on first use. */
export class EngineGuides {
  #guides: Guides | undefined;
  constructor(readonly files: ModelFiles, readonly vocab: number) {}

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
    this.#guides ??= new Guides(async () => {
      const { loadText } = await import("../../text/load.ts");
      return (await loadText(this.files)).tokenizer;
    }, this.vocab);
    return await this.#guides.guide(request);
  }
}
