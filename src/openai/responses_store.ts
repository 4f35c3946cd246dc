/**
 * The responses Kiln keeps so that `previous_response_id` can continue a conversation: in
 * memory, at most `maxResponses` of them (the oldest dropped first) and each for at most
 * `maxAgeMs`. Nothing is written anywhere; a restart forgets them all.
 */
import type { ConversationItem } from "./responses_input.ts";
import type { ResponseObject, ResponseOutputItem } from "./responses_types.ts";

/** Default bounds of a {@linkcode ResponseStore}: 256 responses, one hour each. */
export const STORE_DEFAULTS = { maxResponses: 256, maxAgeMs: 60 * 60 * 1000 } as const;

/** A kept response: the response object, and the conversation a continuation starts from. */
export interface StoredResponse {
  /** The response as it was answered. */
  response: ResponseObject;
  /** Its conversation (earlier items, its input, its output), without its `instructions`. */
  items: readonly ConversationItem[];
}

/** An output item as the conversation item it becomes when the conversation goes on. */
export function conversationItem(item: ResponseOutputItem): ConversationItem {
  switch (item.type) {
    case "message":
      return {
        type: "message",
        role: "assistant",
        content: item.content.map((c) => c.text).join(""),
      };
    case "function_call":
      return {
        type: "function_call",
        call_id: item.call_id,
        name: item.name,
        arguments: item.arguments,
      };
    case "reasoning":
      return { type: "reasoning", text: item.content.map((c) => c.text).join("") };
  }
}

/** Responses by id, bounded in number and age. */
export class ResponseStore {
  /** In insertion order, which is age order (ids are never reused). */
  readonly #entries = new Map<string, StoredResponse & { at: number }>();

  /**
   * At most `maxResponses` (0 keeps none), each at most `maxAgeMs` old; `now` is the clock in
   * milliseconds (tests pass their own).
   */
  constructor(
    readonly maxResponses: number = STORE_DEFAULTS.maxResponses,
    readonly maxAgeMs: number = STORE_DEFAULTS.maxAgeMs,
    readonly now: () => number = Date.now,
  ) {
    if (!Number.isInteger(maxResponses) || maxResponses < 0) {
      throw new RangeError(`maxResponses: expected an integer >= 0, got ${maxResponses}`);
    }
    if (!(maxAgeMs > 0)) throw new RangeError(`maxAgeMs: expected a number > 0, got ${maxAgeMs}`);
  }

  /** How many are kept now (the expired ones dropped first). */
  get size(): number {
    this.#expire();
    return this.#entries.size;
  }

  /** The response `id`, or undefined when it was never kept, is too old, or was dropped. */
  get(id: string): StoredResponse | undefined {
    this.#expire();
    const entry = this.#entries.get(id);
    return entry && { response: entry.response, items: entry.items };
  }

  /** Keep `response`, whose conversation before its output was `before`. */
  put(response: ResponseObject, before: readonly ConversationItem[]): void {
    if (this.maxResponses === 0) return;
    this.#expire();
    const items = [...before, ...response.output.map(conversationItem)];
    this.#entries.set(response.id, { response, items, at: this.now() });
    for (const id of this.#entries.keys()) {
      if (this.#entries.size <= this.maxResponses) break;
      this.#entries.delete(id);
    }
  }

  #expire(): void {
    const oldest = this.now() - this.maxAgeMs;
    for (const [id, entry] of this.#entries) {
      if (entry.at > oldest) break;
      this.#entries.delete(id);
    }
  }
}
