/**
 * Chat templates from `tokenizer_config.json`, rendered with `@huggingface/jinja` (the Jinja
 * implementation made for them); models without one get a plain default.
 */
import { Template } from "@huggingface/jinja";
import { describe } from "../contract/describe.ts";
import { EngineError } from "../contract/errors.ts";
import { type RenderBudget, renderWithBudget } from "./template_budget.ts";

const JINJA = "@huggingface/jinja";

export { DEFAULT_RENDER_BUDGET, type RenderBudget } from "./template_budget.ts";

/** A function call an assistant message made (the OpenAI and Hugging Face form). */
export interface ChatToolCall {
  /** The call's id, which the `tool` message answering it names. */
  id?: string;
  /** `function`. */
  type?: string;
  /** The function called and its arguments (an object, or its JSON text). */
  function: { name: string; arguments: Readonly<Record<string, unknown>> | string };
}

/** One message of a conversation; templates read the optional fields where they know them. */
export interface ChatMessage {
  /** Who speaks: `system`, `user`, `assistant`, `tool`, ... */
  role: string;
  /** The message's text. */
  content: string;
  /** An assistant's function calls. */
  tool_calls?: readonly ChatToolCall[];
  /** A `tool` message: the id of the call it answers. */
  tool_call_id?: string;
  /** A `tool` message: the function that answered. */
  name?: string;
  /** An assistant's reasoning, apart from its answer (Qwen3's `reasoning_content`). */
  reasoning_content?: string;
  /** An assistant's reasoning as gpt-oss's template reads it. */
  thinking?: string;
}

/** What a render passes the template besides the messages and special tokens. */
export interface ChatRenderOptions {
  /** End with the assistant's header, so the model writes the reply (default true). */
  addGenerationPrompt?: boolean;
  /** Function definitions (JSON schema objects), the template's `tools`; unset is `none`. */
  tools?: readonly Readonly<Record<string, unknown>>[];
  /** More template variables: `enable_thinking`, `reasoning_effort`, ... */
  variables?: Readonly<Record<string, unknown>>;
  /** The clock `strftime_now` reads (default: the current time). */
  now?: () => Date;
}

/** `role: content` lines, then `assistant: ` when a reply is wanted. */
export const DEFAULT_CHAT_TEMPLATE: string =
  "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}" +
  "{% if add_generation_prompt %}assistant: {% endif %}";

/** A chat template compiled once; renders messages into a prompt string under a budget. */
export class ChatTemplate {
  readonly #template: Template;

  /**
   * `isDefault`: the model has no template of its own. `budget`: limits on every render (see
   * {@linkcode RenderBudget}; unset limits take {@linkcode DEFAULT_RENDER_BUDGET}).
   */
  constructor(
    readonly source: string,
    readonly isDefault = false,
    readonly budget: RenderBudget = {},
  ) {
    if (typeof source !== "string") {
      throw EngineError.invalidArgument(
        `chat template: expected a string, got ${describe(source)}`,
      );
    }
    try {
      this.#template = new Template(source);
    } catch (e) {
      throw EngineError.fromLibrary(JINJA, "chat template", e);
    }
  }

  /**
   * The chat template of a `tokenizer_config.json`: a string, or a list of `{name, template}`
   * (the one named `default`, else the first). No `chat_template` gives the plain default; one of
   * another shape is `InvalidArgument`.
   */
  static fromConfig(config: Record<string, unknown> | undefined): ChatTemplate {
    const t = config?.chat_template;
    if (t === undefined || t === null) return new ChatTemplate(DEFAULT_CHAT_TEMPLATE, true);
    if (typeof t === "string") return new ChatTemplate(t);
    const named = Array.isArray(t) ? t : [];
    named.forEach((x, i) => {
      if (
        typeof x !== "object" || x === null || typeof x.template !== "string" ||
        !(x.name === undefined || typeof x.name === "string")
      ) {
        throw EngineError.invalidArgument(
          `tokenizer_config.json: chat_template[${i}]: expected {name, template}, got ${
            describe(x)
          }`,
        );
      }
    });
    const pick = named.find((x) => x.name === "default") ?? named[0];
    if (pick === undefined) {
      throw EngineError.invalidArgument(
        `tokenizer_config.json: chat_template: expected a string or a list of {name, template}, got ${
          describe(t)
        }`,
      );
    }
    return new ChatTemplate(pick.template);
  }

  /**
   * Render a conversation within the template's budget, with the variables Hugging Face's
   * `apply_chat_template` passes (`messages`, `tools`, `documents`, `add_generation_prompt`, the
   * special tokens' strings, then `options.variables`): over budget is `ResourceExhausted`, a
   * template that throws is `InvalidArgument` with its message (the library's error as `cause`).
   */
  render(
    messages: readonly ChatMessage[],
    special: Readonly<Record<string, string>> = {},
    options: ChatRenderOptions = {},
  ): string {
    try {
      return renderWithBudget(
        this.#template,
        {
          messages: messages.map((m) => ({ ...m })),
          tools: options.tools === undefined ? null : [...options.tools],
          documents: null,
          add_generation_prompt: options.addGenerationPrompt ?? true,
          ...special,
          ...options.variables,
        },
        this.budget,
        options.now,
      );
    } catch (e) {
      throw EngineError.fromLibrary(JINJA, "chat template", e);
    }
  }
}
