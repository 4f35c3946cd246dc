/**
 * The request side of reasoning: `chat_template_kwargs` and `reasoning_effort` turned into the
 * chat template's variables, and how the rendered prompt leaves the reply (which reasoning
 * convention reads it, and whether the reply starts inside reasoning).
 */
import { describe } from "../contract/describe.ts";
import { EngineError } from "../contract/errors.ts";
import type { ChatTemplate } from "../text/chat.ts";
import type { ModelText } from "../text/load.ts";
import { detectReasoning, type ReasoningConvention, type ReplyStart } from "./reasoning.ts";

type Body = Record<string, unknown>;

/** The values of `reasoning_effort` (OpenAI's), passed as they are to a template that reads it. */
export const REASONING_EFFORTS: readonly string[] = ["none", "minimal", "low", "medium", "high"];

/** Variables Kiln sets itself in every render: `chat_template_kwargs` may not replace them. */
const RESERVED = ["messages", "tools", "documents", "add_generation_prompt"];

const isObject = (v: unknown): v is Body =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The template variables a chat body asks for: `chat_template_kwargs`'s entries (e.g.
 * `enable_thinking: false`), then `reasoning_effort`, which only a template that reads a
 * variable of that name takes (gpt-oss's); undefined when the body asks for none. Throws
 * `EngineError` (`InvalidArgument`, `param` the field) for a `chat_template_kwargs` that is not
 * an object or that names a variable Kiln sets, and for a `reasoning_effort` that is not one of
 * {@linkcode REASONING_EFFORTS} or that the template does not read.
 */
export function templateVariables(
  b: Record<string, unknown>,
  template: ChatTemplate,
): Record<string, unknown> | undefined {
  const kwargs = b.chat_template_kwargs, effort = b.reasoning_effort;
  let variables: Body | undefined;
  if (kwargs !== undefined && kwargs !== null) {
    if (!isObject(kwargs)) {
      throw EngineError.invalidField(
        "chat_template_kwargs",
        `expected an object, got ${describe(kwargs)}`,
      );
    }
    const reserved = RESERVED.find((k) => Object.hasOwn(kwargs, k));
    if (reserved !== undefined) {
      throw EngineError.invalidField(
        "chat_template_kwargs",
        `${reserved}: set by the request itself, not a template argument`,
      );
    }
    variables = { ...kwargs };
  }
  if (effort !== undefined && effort !== null) {
    if (typeof effort !== "string" || !REASONING_EFFORTS.includes(effort)) {
      throw EngineError.invalidField(
        "reasoning_effort",
        `expected one of ${REASONING_EFFORTS.map((e) => `"${e}"`).join(", ")}, got ${
          describe(effort)
        }`,
      );
    }
    if (!template.source.includes("reasoning_effort")) {
      throw EngineError.invalidField(
        "reasoning_effort",
        "this model's chat template takes no reasoning effort",
      );
    }
    variables = { ...variables, reasoning_effort: effort };
  }
  return variables;
}

/** How a chat reply's reasoning is read: the convention, and how the prompt left the reply. */
export interface ReplyReasoning {
  /** The convention the model's chat template teaches. */
  convention: ReasoningConvention;
  /** How the rendered prompt left the reply (see {@linkcode ReplyStart}). */
  start: ReplyStart;
}

/** Prompt tokens decoded to see how the prompt's text ends (the generation prompt's tail). */
const TAIL_TOKENS = 64;

/**
 * How the reply to the chat prompt `prompt` (token ids, rendered by `text`'s template) is read
 * for reasoning; undefined when the template teaches no convention Kiln reads.
 */
export function replyReasoning(
  text: ModelText,
  prompt: readonly number[],
): ReplyReasoning | undefined {
  const convention = detectReasoning(text.chat.source);
  if (convention === undefined) return undefined;
  const tail = text.tokenizer.decode(prompt.slice(-TAIL_TOKENS), { skipSpecial: false });
  return { convention, start: convention.start(tail) };
}
