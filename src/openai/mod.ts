/**
 * The OpenAI surface's structured output: `response_format` and `tool_choice` as Dynamo's
 * `guided_decoding`, chat `messages` with function calls for the template, and the readers of
 * function calls in a model's output, one per chat-template convention.
 * @module
 */
export { FieldError } from "./field_error.ts";
export { chatMessages } from "./messages.ts";
export {
  type GuidedDecoding,
  responseFormat,
  type StructuredOutput,
  structuredOutput,
} from "./structured.ts";
export {
  constrainedConvention,
  detectConvention,
  parseToolCalls,
  type ReadState,
  TOOL_CALL_CONVENTIONS,
  type ToolCallConvention,
  ToolCallParser,
  type ToolCallStep,
} from "./tool_calls.ts";
export type { Opening, ParsedToolCall, Scan } from "./tool_scan.ts";
