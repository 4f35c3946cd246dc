/** `ModelText`: what a model's text side is, whichever reader made it (`load.ts`, `gguf/`). */
import type { ChatTemplate } from "./chat.ts";
import type { TextTokenizer } from "./tokenizer.ts";

/** A model's tokenizer and chat template. */
export interface ModelText {
  /** Encodes prompts and decodes output. */
  tokenizer: TextTokenizer;
  /** The model's chat template, or the plain default. */
  chat: ChatTemplate;
}
