/**
 * The request, response and stream-event shapes of Kiln's Responses API (`POST /v1/responses`,
 * `KilnModel.responses.create`), the subset of OpenAI's that Kiln honours (`responses.ts`).
 */

/** A text part of an input message: `input_text` (any role) or `output_text` (an assistant's). */
export interface ResponseInputText {
  /** `input_text`, or `output_text` for an earlier reply given back. */
  type: "input_text" | "output_text";
  /** The text. */
  text: string;
}

/** A message of the conversation. */
export interface ResponseInputMessage {
  /** `message` (may be left out). */
  type?: "message";
  /** `user`, `system`, `developer` (given to the template as `system`) or `assistant`. */
  role: "user" | "system" | "developer" | "assistant";
  /** Text, or text parts. */
  content: string | ResponseInputText[];
}

/** An earlier function call of the model, given back. */
export interface ResponseFunctionCallItem {
  /** Always `function_call`. */
  type: "function_call";
  /** The call's id, which its output names. */
  call_id: string;
  /** The function's name. */
  name: string;
  /** The arguments' JSON text. */
  arguments: string;
  /** The item's id (`fc_…`), when given back from an output; not read. */
  id?: string;
}

/** The result of a function call. */
export interface ResponseFunctionCallOutputItem {
  /** Always `function_call_output`. */
  type: "function_call_output";
  /** The call it answers. */
  call_id: string;
  /** The result, as text or text parts. */
  output: string | ResponseInputText[];
}

/** One item of `input`: a message, a function call, its output (or an output item given back). */
export type ResponseInputItem =
  | ResponseInputMessage
  | ResponseFunctionCallItem
  | ResponseFunctionCallOutputItem
  | ResponseOutputItem;

/** A function the model may call, in the Responses form (flat, not under `function`). */
export interface ResponseFunctionTool {
  /** Always `function`. */
  type: "function";
  /** 1 to 64 letters, digits, `_` or `-`. */
  name: string;
  /** What it does. */
  description?: string | null;
  /** Its arguments' JSON Schema. */
  parameters?: Record<string, unknown> | null;
  /** Accepted; every call is read as the template's convention gives it. */
  strict?: boolean | null;
}

/** `text.format`: plain text, any JSON object, or JSON matching a schema (guided decoding). */
export type ResponseTextFormat =
  | { type: "text" }
  | { type: "json_object" }
  | {
    type: "json_schema";
    name: string;
    schema: Record<string, unknown>;
    description?: string;
    strict?: boolean | null;
  };

/** A `POST /v1/responses` body, as far as Kiln honours it (other fields are refused by name). */
export interface ResponseCreateRequest {
  /** Echoed as the response's `model` (default: the served model's name); selects nothing. */
  model?: string;
  /** A user message's text, or the items of the conversation. */
  input?: string | ResponseInputItem[];
  /** A system message put before everything (not carried on by `previous_response_id`). */
  instructions?: string | null;
  /** Functions the model may call. */
  tools?: ResponseFunctionTool[];
  /** `auto` (the default with tools), `none`, `required`, or one function by name. */
  tool_choice?: "auto" | "none" | "required" | { type: "function"; name: string };
  /** `false`: at most one call per reply. */
  parallel_tool_calls?: boolean | null;
  /** `format`: the shape of the text (see {@linkcode ResponseTextFormat}). */
  text?: { format?: ResponseTextFormat; verbosity?: null };
  /** Most tokens to generate (default: the rest of the context). */
  max_output_tokens?: number | null;
  /** Softmax temperature in [0, 2]. */
  temperature?: number | null;
  /** Nucleus sampling, in (0, 1]. */
  top_p?: number | null;
  /** `true`: the answer comes as events. */
  stream?: boolean | null;
  /** `false`: the response is not kept, and no later request can continue from it. */
  store?: boolean | null;
  /** Up to 16 string values, echoed. */
  metadata?: Record<string, string> | null;
  /** Accepted, echoed; no effect. */
  user?: string;
  /** Accepted; the response says `default`. */
  service_tier?: string | null;
  /** Continue the conversation of a stored response: its input and output come first. */
  previous_response_id?: string | null;
  /** `effort` is chat's `reasoning_effort`, under the same rule. */
  reasoning?: { effort?: string | null; summary?: null } | null;
}

/** A reply message of the output. */
export interface ResponseOutputMessage {
  /** Always `message`. */
  type: "message";
  /** `msg_` and random hex. */
  id: string;
  /** Always `assistant`. */
  role: "assistant";
  /** `in_progress` while it streams; `incomplete` when the reply was cut. */
  status: "in_progress" | "completed" | "incomplete";
  /** The text, in one part. */
  content: { type: "output_text"; text: string; annotations: never[] }[];
}

/** A function call of the output. */
export interface ResponseOutputFunctionCall {
  /** Always `function_call`. */
  type: "function_call";
  /** `fc_` and random hex. */
  id: string;
  /** The call's id, which its `function_call_output` names. */
  call_id: string;
  /** The function's name. */
  name: string;
  /** The arguments' JSON text. */
  arguments: string;
  /** `in_progress` while it streams. */
  status: "in_progress" | "completed" | "incomplete";
}

/** The model's reasoning, when the chat layer reads reasoning text from the reply. */
export interface ResponseReasoningItem {
  /** Always `reasoning`. */
  type: "reasoning";
  /** `rs_` and random hex. */
  id: string;
  /** Always empty: no summaries are made. */
  summary: never[];
  /** The reasoning text, in one part. */
  content: { type: "reasoning_text"; text: string }[];
  /** `in_progress` while it streams. */
  status: "in_progress" | "completed" | "incomplete";
}

/** One item of a response's `output`. */
export type ResponseOutputItem =
  | ResponseOutputMessage
  | ResponseOutputFunctionCall
  | ResponseReasoningItem;

/** Token counts of a response. */
export interface ResponseUsage {
  /** Tokens of the prompt (after the chat template). */
  input_tokens: number;
  /** Always 0: Kiln does not report prefix-cache hits here. */
  input_tokens_details: { cached_tokens: number };
  /** Tokens generated. */
  output_tokens: number;
  /** Of those, the tokens of reasoning. */
  output_tokens_details: { reasoning_tokens: number };
  /** `input_tokens + output_tokens`. */
  total_tokens: number;
}

/** How a response ended. */
export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed" | "cancelled";

/** A response (`object: "response"`): the output, usage, and the request's settings echoed. */
export interface ResponseObject {
  /** `resp_` and random hex. */
  id: string;
  /** The type tag. */
  object: "response";
  /** Creation time, in whole seconds since the Unix epoch. */
  created_at: number;
  /** See {@linkcode ResponseStatus}. */
  status: ResponseStatus;
  /** Why the response failed (`failed` only). */
  error: { code: string; message: string } | null;
  /** `{reason: "max_output_tokens"}` when the reply was cut (`incomplete` only). */
  incomplete_details: { reason: string } | null;
  /** The request's `model`, or the served model's name. */
  model: string;
  /** Reasoning, reply messages and function calls, in the order the model wrote them. */
  output: ResponseOutputItem[];
  /** Token counts; `null` until the response ends. */
  usage: ResponseUsage | null;
  /** The request's settings, echoed (defaults filled in). */
  [setting: string]: unknown;
}

/** One event of a streamed response: its `type`, a `sequence_number` from 0, and its fields. */
export interface ResponseStreamEvent {
  /** `response.created`, `response.output_text.delta`, ..., `response.completed`, `error`. */
  type: string;
  /** The event's position in the stream, from 0. */
  sequence_number: number;
  /** The event's fields (`response`, `item`, `delta`, `output_index`, ...). */
  [field: string]: unknown;
}
