/**
 * OpenAI chat `messages` as the chat template's messages: text content (a string, `null` for an
 * assistant that only calls functions, or an array of text parts), an assistant's `tool_calls`
 * (their `arguments`, JSON text in OpenAI's form, handed to the template as the object they
 * encode, as Hugging Face templates expect), an assistant's reasoning (`reasoning_content`), and a
 * `tool` message's `tool_call_id`.
 */
import { describe } from "../contract/describe.ts";
import type { ChatMessage, ChatToolCall } from "../text/chat.ts";
import { EngineError } from "../contract/errors.ts";

type Body = Record<string, unknown>;

const isObject = (v: unknown): v is Body =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function content(m: Body, at: string): string {
  const c = m.content;
  if (typeof c === "string") return c;
  if ((c === null || c === undefined) && m.role === "assistant") return "";
  if (Array.isArray(c)) {
    return c.map((part, j) => {
      if (!isObject(part) || part.type !== "text" || typeof part.text !== "string") {
        throw EngineError.invalidField(
          "messages",
          `${at}.content[${j}]: only text parts are supported, got ${describe(part)}`,
        );
      }
      return part.text;
    }).join("");
  }
  throw EngineError.invalidField("messages", `${at}: expected text content, got ${describe(c)}`);
}

function toolCall(c: unknown, at: string): ChatToolCall {
  const f = isObject(c) ? c.function : undefined;
  if (
    !isObject(c) || (c.type !== undefined && c.type !== "function") || !isObject(f) ||
    typeof f.name !== "string" || (c.id !== undefined && typeof c.id !== "string")
  ) {
    throw EngineError.invalidField(
      "messages",
      `${at}: expected {id, type: "function", function: {name, arguments}}`,
    );
  }
  let args = f.arguments ?? {};
  if (typeof args === "string") {
    try {
      const parsed = JSON.parse(args);
      if (isObject(parsed)) args = parsed;
    } catch {
      // Not JSON: the template gets the text as it came.
    }
  }
  if (typeof args !== "string" && !isObject(args)) {
    throw EngineError.invalidField(
      "messages",
      `${at}.function.arguments: expected JSON text or an object`,
    );
  }
  return {
    ...(c.id === undefined ? {} : { id: c.id as string }),
    type: "function",
    function: { name: f.name, arguments: args as Body | string },
  };
}

/**
 * An assistant's reasoning sent back in the history (`reasoning_content`, or vLLM's `reasoning`),
 * as the reply gave it: templates read it as `reasoning_content` (Qwen3) or `thinking` (gpt-oss).
 */
function priorReasoning(m: Body, at: string): string | undefined {
  const r = m.reasoning_content ?? m.reasoning;
  if (r === undefined || r === null || m.role !== "assistant") return undefined;
  if (typeof r !== "string") {
    throw EngineError.invalidField("messages", `${at}.reasoning_content: expected text`);
  }
  return r;
}

/** The template's messages for a chat body's `messages`; throws `EngineError` (`InvalidArgument`, `param` the field). */
export function chatMessages(v: unknown): ChatMessage[] {
  if (!Array.isArray(v) || v.length === 0) {
    throw EngineError.invalidField("messages", "expected a non-empty array");
  }
  return v.map((m, i) => {
    const at = `[${i}]`;
    if (!isObject(m) || typeof m.role !== "string") {
      throw EngineError.invalidField("messages", `${at}: expected a role and text content`);
    }
    const message: ChatMessage = { role: m.role, content: content(m, at) };
    if (m.tool_calls !== undefined && m.tool_calls !== null) {
      if (m.role !== "assistant" || !Array.isArray(m.tool_calls)) {
        throw EngineError.invalidField(
          "messages",
          `${at}.tool_calls: only an assistant's, as an array`,
        );
      }
      message.tool_calls = m.tool_calls.map((c, j) => toolCall(c, `${at}.tool_calls[${j}]`));
    }
    if (m.role === "tool") {
      if (typeof m.tool_call_id !== "string") {
        throw EngineError.invalidField(
          "messages",
          `${at}.tool_call_id: a tool message names its call`,
        );
      }
      message.tool_call_id = m.tool_call_id;
    }
    if (typeof m.name === "string") message.name = m.name;
    const reasoning = priorReasoning(m, at);
    if (reasoning !== undefined) {
      message.reasoning_content = reasoning;
      message.thinking = reasoning;
    }
    return message;
  });
}
