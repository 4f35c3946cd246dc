/**
 * The chat layer's reply, part by part, as a Responses API response and its stream events: text
 * becomes a `message` item, each call a `function_call` item, reasoning text a `reasoning` item,
 * one item after another in the order the model wrote them, each opened
 * (`response.output_item.added`), filled (`….delta`) and closed (`….done`,
 * `response.output_item.done`) between `response.created`/`response.in_progress` and the end:
 * `response.completed`, `response.incomplete` (cut by `max_output_tokens`, or cancelled), or
 * `response.failed` (the run failed, or shutdown cut it). The whole answer is built by the same
 * code with the events dropped.
 */
import type { ToolCallDelta } from "./generation.ts";
import { openAIError } from "./errors.ts";
import type {
  ResponseObject,
  ResponseOutputItem,
  ResponseStatus,
  ResponseStreamEvent,
} from "./responses_types.ts";

/** A part of the reply as the chat layer gives it (a `Piece`, or the server's `Choice`). */
export interface ReplyPart {
  /** New reply text. */
  text: string;
  /** New reasoning text, where the chat layer reads it apart from the reply. */
  reasoning?: string;
  /** Of `tokens`, those that were reasoning. */
  reasoningTokens?: number;
  /** Call deltas: a header (`id`, `name`), then argument text. */
  toolCalls?: ToolCallDelta[];
  /** OpenAI's finish reason, on the last part (`abort`: shutdown cut the request). */
  finish?: string | null;
  /** Tokens generated behind this part. */
  tokens: number;
}

/** An id of Kiln's making: `prefix`, `_`, and 32 random hex digits. */
export const newResponseId = (prefix: string): string =>
  `${prefix}_${crypto.randomUUID().replaceAll("-", "")}`;

/** The error code of a failed response, from OpenAI's error type. */
function errorCode(type: string): string {
  return type === "rate_limit_error"
    ? "rate_limit_exceeded"
    : type === "invalid_request_error"
    ? "invalid_prompt"
    : "server_error";
}

const clone = <T>(v: T): T => structuredClone(v);

/** Builds one response from the reply's parts, handing each stream event to `emit`. */
export class ResponseBuilder {
  /** The response so far; whole once `finish` or `fail` has returned it. */
  readonly response: ResponseObject;
  #sequence = 0;
  #open: { index: number; item: ResponseOutputItem } | undefined;
  /** Whitespace held back: alone after another item it opens no message. */
  #space = "";
  #reasoningTokens = 0;
  #finish: string | null = null;

  /**
   * A response `id` to `model` whose prompt was `inputTokens` tokens, echoing `echo` (the
   * request's settings); `emit` gets each event (a no-op for a whole answer).
   */
  constructor(
    id: string,
    model: string,
    readonly inputTokens: number,
    echo: Record<string, unknown>,
    readonly emit: (event: ResponseStreamEvent) => void = () => {},
  ) {
    this.response = {
      id,
      object: "response",
      created_at: Math.floor(Date.now() / 1000),
      status: "in_progress",
      error: null,
      incomplete_details: null,
      model,
      output: [],
      usage: null,
      ...echo,
    };
  }

  #event(type: string, fields: Record<string, unknown>): void {
    this.emit({ type, sequence_number: this.#sequence++, ...fields });
  }

  /** `response.created` and `response.in_progress`. */
  start(): void {
    this.#event("response.created", { response: clone(this.response) });
    this.#event("response.in_progress", { response: clone(this.response) });
  }

  /** Take in one part of the reply. */
  push(part: ReplyPart): void {
    this.#reasoningTokens += part.reasoningTokens ?? 0;
    if (part.reasoning) {
      const item = this.#item("reasoning");
      const c = item.type === "reasoning" ? item.content[0]! : undefined;
      if (c) c.text += part.reasoning;
      this.#delta("response.reasoning_text.delta", { content_index: 0, delta: part.reasoning });
    }
    if (part.text !== "") this.#text(part.text);
    for (const d of part.toolCalls ?? []) {
      if (d.id !== undefined || d.function.name !== undefined) {
        this.#openItem({
          type: "function_call",
          id: newResponseId("fc"),
          call_id: d.id ?? "",
          name: d.function.name ?? "",
          arguments: "",
          status: "in_progress",
        });
      }
      const item = this.#open?.item;
      if (d.function.arguments === "" || item?.type !== "function_call") continue;
      item.arguments += d.function.arguments;
      this.#delta("response.function_call_arguments.delta", { delta: d.function.arguments });
    }
    if (part.finish) this.#finish = part.finish;
  }

  #text(text: string): void {
    if (this.#open?.item.type !== "message") {
      if (this.response.output.length > 0 && text.trim() === "") {
        this.#space += text;
        return;
      }
      text = this.#space + text;
      this.#item("message");
    }
    const item = this.#open!.item;
    if (item.type === "message") item.content[0]!.text += text;
    this.#delta("response.output_text.delta", { content_index: 0, delta: text, logprobs: [] });
  }

  /** The open item of `type`, opening a new one when another (or none) is open. */
  #item(type: "message" | "reasoning"): ResponseOutputItem {
    if (this.#open?.item.type === type) return this.#open.item;
    const status = "in_progress" as const;
    this.#openItem(
      type === "message"
        ? { type, id: newResponseId("msg"), role: "assistant", status, content: [] }
        : { type, id: newResponseId("rs"), summary: [], content: [], status },
    );
    const part = type === "message"
      ? { type: "output_text", text: "", annotations: [] }
      : { type: "reasoning_text", text: "" };
    this.#delta("response.content_part.added", { content_index: 0, part: clone(part) });
    const item = this.#open!.item;
    if (item.type !== "function_call") (item.content as unknown[]).push(part);
    return item;
  }

  #openItem(item: ResponseOutputItem): void {
    this.#close("completed");
    this.#space = "";
    const index = this.response.output.push(item) - 1;
    this.#open = { index, item };
    this.#event("response.output_item.added", { output_index: index, item: clone(item) });
  }

  /** An event about the open item: its id and index, and `fields`. */
  #delta(type: string, fields: Record<string, unknown>): void {
    const { index, item } = this.#open!;
    this.#event(type, { item_id: item.id, output_index: index, ...fields });
  }

  #close(status: "completed" | "incomplete"): void {
    const open = this.#open;
    if (open === undefined) return;
    const { item } = open;
    item.status = status;
    if (item.type === "function_call") {
      this.#delta("response.function_call_arguments.done", { arguments: item.arguments });
    } else {
      const part = item.content[0]!;
      const done = item.type === "message"
        ? "response.output_text.done"
        : "response.reasoning_text.done";
      this.#delta(done, {
        content_index: 0,
        text: part.text,
        ...(item.type === "message" ? { logprobs: [] } : {}),
      });
      this.#delta("response.content_part.done", { content_index: 0, part: clone(part) });
    }
    this.#event("response.output_item.done", { output_index: open.index, item: clone(item) });
    this.#open = undefined;
  }

  #usage(outputTokens: number): void {
    this.response.usage = {
      input_tokens: this.inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: Math.min(this.#reasoningTokens, outputTokens) },
      total_tokens: this.inputTokens + outputTokens,
    };
  }

  /**
   * The reply ended (`outputTokens` generated): the open item closes, and the response ends
   * `completed`, `incomplete` (`length`: `max_output_tokens`), `cancelled` (the caller's signal)
   * or `failed` (`abort`: shutdown cut it). A reply with no item at all gets an empty message.
   */
  finish(outputTokens: number): ResponseObject {
    const finish = this.#finish;
    if (this.response.output.length === 0) this.#item("message");
    const cut = finish === "length" || finish === "cancelled" || finish === "abort";
    this.#close(cut ? "incomplete" : "completed");
    const r = this.response;
    let status: ResponseStatus = "completed";
    if (finish === "length") {
      status = "incomplete";
      r.incomplete_details = { reason: "max_output_tokens" };
    } else if (finish === "cancelled") status = "cancelled";
    else if (finish === "abort") {
      status = "failed";
      r.error = { code: "server_error", message: "cut short: the server is shutting down" };
    }
    r.status = status;
    this.#usage(outputTokens);
    const event = status === "completed"
      ? "response.completed"
      : status === "failed"
      ? "response.failed"
      : "response.incomplete";
    this.#event(event, { response: clone(r) });
    return r;
  }

  /** The run failed with `error`: `response.failed`, then an `error` event. */
  fail(error: unknown, outputTokens = 0): ResponseObject {
    this.#close("incomplete");
    const { message, type, param } = openAIError(error);
    const code = errorCode(type);
    const r = this.response;
    r.status = "failed";
    r.error = { code, message };
    this.#usage(outputTokens);
    this.#event("response.failed", { response: clone(r) });
    this.#event("error", { code, message, param });
    return r;
  }
}
