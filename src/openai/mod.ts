/**
 * Kiln's OpenAI layer, over any `LLMEngine` and with no HTTP: `/v1/completions` and
 * `/v1/chat/completions` bodies checked and turned into Dynamo `PreprocessedRequest`s (a bad one
 * is an `EngineError` `InvalidArgument` whose `param` names the field), `response_format` and
 * `tool_choice` as `guided_decoding`, the engine's stream driven into OpenAI's response objects and
 * stream chunks (stop strings, logprobs, usage, function calls and reasoning read per chat-template
 * convention), the Responses API translated onto the chat path (`responses.ts`), and the
 * `chat.completions.create` / `completions.create` / `responses.create` helpers `openModel` and
 * `serve` share.
 * @module
 */
export * from "./completions.ts";
export { badRequest, clip, MAX_MESSAGE, type OpenAIError, openAIError, quote } from "./errors.ts";
export {
  addPart,
  addToolCalls,
  type Choice,
  choiceOf,
  chunkBody,
  jobUsage,
  responseBody,
  textAfter,
  type ToolCall,
  usage,
  usageChunk,
} from "./format.ts";
export {
  type FinishText,
  type Piece,
  runChoice,
  type TokenLogprob,
  type TokenText,
  type ToolCallDelta,
} from "./generation.ts";
export { chatMessages } from "./messages.ts";
export { choiceSeed, type Job, type Limits, parseJob } from "./requests.ts";
export {
  detectReasoning,
  parseReasoning,
  REASONING_CONVENTIONS,
  type ReasoningConvention,
  type ReasoningMode,
  type ReasoningReader,
  type ReasoningStep,
  type ReplyStart,
} from "./reasoning.ts";
export {
  REASONING_EFFORTS,
  type ReplyReasoning,
  replyReasoning,
  templateVariables,
} from "./reasoning_request.ts";
export { checkFields } from "./request_fields.ts";
export * from "./responses.ts";
export { newResponseId, type ReplyPart, ResponseBuilder } from "./responses_output.ts";
export type { ConversationItem } from "./responses_input.ts";
export {
  notStored,
  previousResponseId,
  responsesError,
  type ResponsesJob,
  responsesJob,
} from "./responses_request.ts";
export {
  conversationItem,
  ResponseStore,
  STORE_DEFAULTS,
  type StoredResponse,
} from "./responses_store.ts";
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
export type { CallCheck, Opening, ParsedToolCall, ReplyEnd, Scan } from "./tool_scan.ts";
export { countRefused, TrackedRequest } from "./tracking.ts";
