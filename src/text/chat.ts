/**
 * Chat templates from `tokenizer_config.json`, rendered with `@huggingface/jinja` (the Jinja
 * implementation made for them); models without one get a plain default.
 */
import { Template } from "@huggingface/jinja";
import { EngineError } from "../contract/errors.ts";

export interface ChatMessage {
  role: string;
  content: string;
}

/** `role: content` lines, then `assistant: ` when a reply is wanted. */
export const DEFAULT_CHAT_TEMPLATE =
  "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}" +
  "{% if add_generation_prompt %}assistant: {% endif %}";

export class ChatTemplate {
  readonly #template: Template;

  /** `isDefault`: the model has no template of its own. */
  constructor(readonly source: string, readonly isDefault = false) {
    try {
      this.#template = new Template(source);
    } catch (e) {
      throw EngineError.invalidArgument(`chat template: ${(e as Error).message}`, e);
    }
  }

  /** The chat template of a `tokenizer_config.json` (a string or a list of named templates). */
  static fromConfig(config: Record<string, unknown> | undefined): ChatTemplate {
    const t = config?.chat_template;
    if (typeof t === "string") return new ChatTemplate(t);
    if (Array.isArray(t)) {
      const named = t as { name?: string; template?: string }[];
      const pick = named.find((x) => x.name === "default") ?? named[0];
      if (typeof pick?.template === "string") return new ChatTemplate(pick.template);
    }
    return new ChatTemplate(DEFAULT_CHAT_TEMPLATE, true);
  }

  /** Render a conversation; a template that throws is `InvalidArgument` with its message. */
  render(
    messages: readonly ChatMessage[],
    special: Readonly<Record<string, string>> = {},
    addGenerationPrompt = true,
  ): string {
    try {
      return this.#template.render({
        ...special,
        messages: messages.map((m) => ({ ...m })),
        add_generation_prompt: addGenerationPrompt,
      });
    } catch (e) {
      throw EngineError.invalidArgument(`chat template: ${(e as Error).message}`, e);
    }
  }
}
