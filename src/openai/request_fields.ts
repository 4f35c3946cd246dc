/**
 * Which fields of an OpenAI request body Kiln honours. A field it would otherwise ignore is
 * refused with 400 naming it: a 200 that silently dropped `logit_bias` or `tools` would return
 * output the client did not ask for. The fields that ask nothing of the output (`user`,
 * `metadata`, `service_tier`, `store: false`) are accepted, with no effect.
 */
import { badRequest, quote } from "./errors.ts";

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
  // Checked by `checkNoEffect`, with no effect on the output: OpenAI's end-user id for abuse
  // monitoring, its bookkeeping of stored completions, and its processing tier.
  "user",
  "store",
  "metadata",
  "service_tier",
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
  // Read by `templateVariables` (src/openai/reasoning_request.ts).
  "chat_template_kwargs",
  "reasoning_effort",
]);

const empty = (v: unknown) =>
  v === undefined || v === null || v === "" ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === "object" && !Array.isArray(v) && Object.keys(v as object).length === 0);

const unsupported = (field: string, why: string) => badRequest(`${field}: ${why}`, field);

const given = (v: unknown) => v !== undefined && v !== null;

/** OpenAI's processing tiers; Kiln has one, so each is served the same way. */
const SERVICE_TIERS = new Set(["auto", "default", "flex", "scale", "priority"]);

/** OpenAI's bounds on `metadata`: key-value pairs, key and value lengths. */
const METADATA = { pairs: 16, key: 64, value: 512 };

/** `metadata`: up to 16 pairs of a string key (64 characters at most) and a string value (512). */
function checkMetadata(v: unknown): void {
  if (!given(v)) return;
  if (typeof v !== "object" || Array.isArray(v)) {
    throw unsupported("metadata", "expected an object of strings");
  }
  const pairs = Object.entries(v as Record<string, unknown>);
  if (pairs.length > METADATA.pairs) {
    throw unsupported("metadata", `at most ${METADATA.pairs} pairs, got ${pairs.length}`);
  }
  for (const [key, value] of pairs) {
    if (key.length > METADATA.key) {
      throw unsupported("metadata", `a key of ${key.length} characters (at most ${METADATA.key})`);
    }
    if (typeof value !== "string" || value.length > METADATA.value) {
      throw unsupported(
        "metadata",
        `${quote(key)}: expected a string of at most ${METADATA.value} characters`,
      );
    }
  }
}

/**
 * The fields accepted with no effect, checked as OpenAI checks them: `user` a string, `metadata`
 * (see `checkMetadata`), `service_tier` one of OpenAI's tiers, and `store` false: `store: true`
 * asks for the completion to be kept for later retrieval, and Kiln keeps none.
 */
function checkNoEffect(b: Body): void {
  if (given(b.user) && typeof b.user !== "string") throw unsupported("user", "expected a string");
  checkMetadata(b.metadata);
  const tier = b.service_tier;
  if (given(tier) && !(typeof tier === "string" && SERVICE_TIERS.has(tier))) {
    throw unsupported(
      "service_tier",
      `expected one of ${[...SERVICE_TIERS].map((t) => `"${t}"`).join(", ")}, got ${quote(tier)}`,
    );
  }
  if (b.store === true) {
    throw unsupported("store", "Kiln keeps no completions (send store: false, or leave it out)");
  }
  if (given(b.store) && typeof b.store !== "boolean") {
    throw unsupported("store", "expected a boolean");
  }
}

/**
 * Refuse a body with a field Kiln does not honour: one it does not know (400 `unsupported
 * field`), or a known one whose value would need what Kiln lacks (`logit_bias` with entries,
 * a `suffix`, the legacy `functions` and `function_call`, `store: true`); and one of the fields
 * accepted with no effect whose value OpenAI would refuse.
 */
export function checkFields(b: Record<string, unknown>, chat: boolean): void {
  const known = chat ? CHAT : COMPLETIONS;
  for (const key of Object.keys(b)) {
    if (!known.has(key)) {
      throw unsupported(key, `unsupported field for ${chat ? "chat " : ""}completions`);
    }
  }
  checkNoEffect(b);
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
