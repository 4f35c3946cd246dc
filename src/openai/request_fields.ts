/**
 * Which fields of an OpenAI request body Kiln honours. A field it would otherwise ignore is
 * refused with 400 naming it: a 200 that silently dropped `logit_bias` or `tools` would return
 * output the client did not ask for.
 */
import { badRequest } from "./errors.ts";

type Body = Record<string, unknown>;

/** Fields of both forms that `parseJob` reads. */
const COMMON = [
  "model",
  "n",
  "best_of",
  "stream",
  "stream_options",
  "stop",
  "max_tokens",
  "temperature",
  "top_p",
  "top_k",
  "min_p",
  "presence_penalty",
  "frequency_penalty",
  "repetition_penalty",
  "seed",
  "min_tokens",
  "ignore_eos",
  "stop_token_ids",
  "skip_special_tokens",
  "include_stop_str_in_output",
  // No effect on the output: OpenAI's end-user id for abuse monitoring.
  "user",
  // Read by `structuredOutput` (src/openai/structured.ts).
  "response_format",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  // Checked below: honoured only when they ask for nothing.
  "logit_bias",
  "suffix",
  "functions",
  "function_call",
] as const;
const COMPLETIONS = new Set<string>([...COMMON, "prompt", "logprobs", "echo"]);
const CHAT = new Set<string>([
  ...COMMON,
  "messages",
  "max_completion_tokens",
  "logprobs",
  "top_logprobs",
]);

const empty = (v: unknown) =>
  v === undefined || v === null || v === "" ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === "object" && !Array.isArray(v) && Object.keys(v as object).length === 0);

const unsupported = (field: string, why: string) => badRequest(`${field}: ${why}`, field);

/**
 * Refuse a body with a field Kiln does not honour: one it does not know (400 `unsupported
 * field`), or a known one whose value would need what Kiln lacks (`logit_bias` with entries,
 * a `suffix`, the legacy `functions` and `function_call`).
 */
export function checkFields(b: Record<string, unknown>, chat: boolean): void {
  const known = chat ? CHAT : COMPLETIONS;
  for (const key of Object.keys(b)) {
    if (!known.has(key)) {
      throw unsupported(key, `unsupported field for ${chat ? "chat " : ""}completions`);
    }
  }
  if (!empty(b.logit_bias)) throw unsupported("logit_bias", "biasing logits is not supported");
  if (!empty(b.suffix)) throw unsupported("suffix", "insertion (a suffix) is not supported");
  // `tools`, `tool_choice` and `response_format` are read by `structuredOutput`; the legacy
  // function fields are not.
  if (!empty(b.functions)) throw unsupported("functions", 'not supported (use "tools")');
  const call = b.function_call;
  if (call !== undefined && call !== null && call !== "none") {
    throw unsupported("function_call", 'not supported (use "tool_choice")');
  }
}
