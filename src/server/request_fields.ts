/**
 * Which fields of an OpenAI request body Kiln honours. A field it would otherwise ignore is
 * refused with 400 naming it: a 200 that silently dropped `logit_bias` or `tools` would return
 * output the client did not ask for.
 */
import { HttpError } from "./errors.ts";

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
  // Checked below: honoured only when they ask for nothing.
  "logit_bias",
  "suffix",
  "response_format",
  "tools",
  "tool_choice",
  "functions",
  "function_call",
  "parallel_tool_calls",
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

const unsupported = (field: string, why: string) => HttpError.badRequest(`${field}: ${why}`, field);

/**
 * Refuse a body with a field Kiln does not honour: one it does not know (400 `unsupported
 * field`), or a known one whose value would need what Kiln lacks (`logit_bias` with entries,
 * a `suffix`, `tools`, a `response_format` other than text; structured output is not built yet).
 */
export function checkFields(b: Body, chat: boolean): void {
  const known = chat ? CHAT : COMPLETIONS;
  for (const key of Object.keys(b)) {
    if (!known.has(key)) {
      throw unsupported(key, `unsupported field for ${chat ? "chat " : ""}completions`);
    }
  }
  if (!empty(b.logit_bias)) throw unsupported("logit_bias", "biasing logits is not supported");
  if (!empty(b.suffix)) throw unsupported("suffix", "insertion (a suffix) is not supported");
  for (const key of ["tools", "functions"]) {
    if (!empty(b[key])) throw unsupported(key, "tool calls are not supported");
  }
  for (const key of ["tool_choice", "function_call"]) {
    const v = b[key];
    if (v !== undefined && v !== null && v !== "none") {
      throw unsupported(key, 'tool calls are not supported (only "none")');
    }
  }
  const format = b.response_format as Body | undefined | null;
  if (format !== undefined && format !== null && format.type !== "text") {
    throw unsupported("response_format", 'structured output is not supported (only "text")');
  }
}
