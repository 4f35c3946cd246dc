/**
 * The conversation of a Responses request: `input` (a string, or message, `function_call`,
 * `function_call_output` and `reasoning` items, an earlier response's output items among them)
 * checked into conversation items, and a conversation turned into chat `messages` for the model's
 * chat template. A bad item is refused naming `input` and the item's place in it (`input[2]`).
 */
import { describe } from "../contract/describe.ts";
import { badRequest } from "./errors.ts";

type Body = Record<string, unknown>;

const isObject = (v: unknown): v is Body =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const given = (v: unknown) => v !== undefined && v !== null;

/** One item of a conversation, as the store keeps it and the chat messages are made from it. */
export type ConversationItem =
  | { type: "message"; role: "user" | "system" | "assistant"; content: string }
  | { type: "function_call"; call_id: string; name: string; arguments: string }
  | { type: "function_call_output"; call_id: string; output: string }
  | { type: "reasoning"; text: string };

const bad = (why: string) => badRequest(`input${why}`, "input");

/** `input`: a string (one user message) or the items of the conversation. */
export function inputItems(v: unknown): ConversationItem[] {
  if (!given(v)) return [];
  if (typeof v === "string") return [{ type: "message", role: "user", content: v }];
  if (!Array.isArray(v)) throw bad(`: expected a string or an array of items, got ${describe(v)}`);
  return v.map((it, i) => inputItem(it, `[${i}]`));
}

const ROLES = { user: "user", system: "system", developer: "system", assistant: "assistant" };

function inputItem(v: unknown, at: string): ConversationItem {
  if (!isObject(v)) throw bad(`${at}: expected an item object, got ${describe(v)}`);
  const type = v.type ?? (v.role !== undefined ? "message" : undefined);
  const str = (key: string): string => {
    if (typeof v[key] !== "string") {
      throw bad(`${at}.${key}: expected a string, got ${describe(v[key])}`);
    }
    return v[key] as string;
  };
  switch (type) {
    case "message": {
      const role = Object.hasOwn(ROLES, v.role as string)
        ? ROLES[v.role as keyof typeof ROLES] as "user" | "system" | "assistant"
        : undefined;
      if (role === undefined) {
        throw bad(
          `${at}.role: expected "user", "system", "developer" or "assistant", got ${
            describe(v.role)
          }`,
        );
      }
      return { type: "message", role, content: textOf(v.content, `${at}.content`) };
    }
    case "function_call":
      return {
        type: "function_call",
        call_id: str("call_id"),
        name: str("name"),
        arguments: str("arguments"),
      };
    case "function_call_output":
      return {
        type: "function_call_output",
        call_id: str("call_id"),
        output: textOf(v.output, `${at}.output`),
      };
    case "reasoning": {
      const parts = Array.isArray(v.content) ? v.content : [];
      return {
        type: "reasoning",
        text: parts.map((p) => isObject(p) && typeof p.text === "string" ? p.text : "").join(""),
      };
    }
    case "item_reference":
      throw bad(`${at}: item references are not supported (give the item itself)`);
    default:
      throw bad(
        `${at}.type: expected "message", "function_call", "function_call_output" or "reasoning", got ${
          describe(type)
        }`,
      );
  }
}

/** Text, or text parts (`input_text`, `output_text`) joined. */
function textOf(c: unknown, at: string): string {
  if (typeof c === "string") return c;
  if (!Array.isArray(c)) throw bad(`${at}: expected text or text parts, got ${describe(c)}`);
  return c.map((p, j) => {
    if (
      isObject(p) && (p.type === "input_text" || p.type === "output_text") &&
      typeof p.text === "string"
    ) {
      return p.text;
    }
    throw bad(
      `${at}[${j}]: only text parts (input_text, output_text) are supported, got ${
        describe(isObject(p) ? p.type : p)
      }`,
    );
  }).join("");
}

/**
 * The chat messages of a conversation: a call joins the assistant message before it, and a
 * reasoning item becomes the `reasoning_content` of the assistant message after it (dropped when
 * none follows).
 */
export function chatMessages(
  instructions: string | undefined,
  items: readonly ConversationItem[],
): Body[] {
  const messages: Body[] = instructions === undefined
    ? []
    : [{ role: "system", content: instructions }];
  const names = new Map<string, string>();
  let reasoning: string | undefined;
  const assistant = (m: Body) => {
    if (reasoning) m.reasoning_content = reasoning;
    reasoning = undefined;
    messages.push(m);
  };
  for (const item of items) {
    if (item.type === "reasoning") reasoning = (reasoning ?? "") + item.text;
    else if (item.type === "message") {
      if (item.role === "assistant") assistant({ role: item.role, content: item.content });
      else messages.push({ role: item.role, content: item.content });
    } else if (item.type === "function_call") {
      names.set(item.call_id, item.name);
      const f = { name: item.name, arguments: item.arguments };
      const call = { id: item.call_id, type: "function", function: f };
      const last = messages.at(-1);
      if (last?.role === "assistant" && reasoning === undefined) {
        last.tool_calls = [...(last.tool_calls as Body[] | undefined ?? []), call];
      } else assistant({ role: "assistant", content: null, tool_calls: [call] });
    } else {
      const name = names.get(item.call_id);
      const m = { role: "tool", tool_call_id: item.call_id, content: item.output };
      messages.push(name === undefined ? m : { ...m, name });
    }
  }
  return messages;
}
