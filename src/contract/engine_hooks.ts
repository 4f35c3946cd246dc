/**
 * Helpers for the members Dynamo 1.5 added to the engine contract: the `llm` registration an
 * `EngineConfig` nests, the health-check probe an engine offers, and engine controls (a table
 * of handlers by name; a name not in it is refused with `InvalidArgument`, naming it).
 */
import { describe } from "./describe.ts";
import { EngineError } from "./errors.ts";
import type { EngineConfig, LlmRegistration, PreprocessedRequest } from "./types.ts";

/** The `LlmRegistration` fields Dynamo 1.3 carried on `EngineConfig` itself. */
export const FLAT_LLM_FIELDS = [
  "context_length",
  "kv_cache_block_size",
  "total_kv_blocks",
  "max_num_seqs",
  "max_num_batched_tokens",
] as const satisfies readonly (keyof LlmRegistration & keyof EngineConfig)[];

/**
 * `config` with `llm` filled in from its flat fields, for one data-parallel rank (rank 0): what
 * Kiln's engines report, so 1.3 readers and 1.5 readers find the same facts.
 */
export function withLlm(config: EngineConfig): EngineConfig {
  const llm: Record<string, number> = { data_parallel_size: 1, data_parallel_start_rank: 0 };
  for (const field of FLAT_LLM_FIELDS) {
    const value = config[field];
    if (value !== undefined) llm[field] = value;
  }
  return { ...config, llm: llm as LlmRegistration };
}

/**
 * The health-check probe of an engine serving `model`: one prompt token (`tokenId`, the
 * model's BOS where it has one), one greedy token out with EOS ignored, marked `is_probe`
 * (`_HEALTH_CHECK` on the wire), the shape of Dynamo's default canary.
 */
export function probeRequest(model: string, tokenId: number): PreprocessedRequest {
  return {
    model,
    token_ids: [tokenId],
    stop_conditions: { max_tokens: 1, ignore_eos: true },
    sampling_options: { temperature: 0 },
    output_options: {},
    eos_token_ids: [],
    annotations: [],
    is_probe: true,
  };
}

/** One engine control: its JSON body in, a JSON object (with `status`) out. */
export type ControlHandler = (
  body: Record<string, unknown>,
) => Promise<Record<string, unknown>>;

/**
 * Run the control `control` names in `handlers` on `body`. A name that is not one of the
 * table's own keys, or a body that is not a JSON object, is refused with `InvalidArgument`
 * naming it (and, for a name, the controls there are).
 */
export function runControl(
  handlers: Readonly<Record<string, ControlHandler>>,
  control: unknown,
  body: unknown,
): Promise<Record<string, unknown>> {
  const offered = Object.keys(handlers);
  if (typeof control !== "string" || !Object.hasOwn(handlers, control)) {
    const list = offered.length > 0 ? `the engine offers ${offered.join(", ")}` : "it offers none";
    return Promise.reject(
      EngineError.invalidArgument(`engine control ${describe(control)} is not offered (${list})`),
    );
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return Promise.reject(
      EngineError.invalidArgument(
        `engine control ${control}: the body must be a JSON object, got ${describe(body)}`,
      ),
    );
  }
  return handlers[control]!(body as Record<string, unknown>);
}
