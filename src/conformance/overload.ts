/**
 * The kit's `kv_cache_overload` check: an engine given more work than its KV cache holds must
 * still end every stream. Sized from what the engine's `EngineConfig` reports (`total_kv_blocks`
 * × `kv_cache_block_size` tokens of cache, `context_length`), it starts at once:
 *
 * - one request that outgrows the longest sequence the engine can hold (its prompt 8 tokens
 *   short of the cache or the context, whichever is smaller, `max_tokens` 32): it must end, with
 *   a terminal chunk (vLLM's engines and Kiln's end it with `length`) or by being refused before
 *   its first chunk;
 * - enough half-length requests that together they need more than the whole cache (up to
 *   {@linkcode MAX_FILL}): each fits alone, so each must end too (served in turn, or refused);
 * - then a short request, which must be served: a head of the queue that cannot fit now must
 *   not block it forever, and it must end without an error finish.
 *
 * No stream may end `cancelled`: nothing cancels them before the step's bound has passed.
 *
 * An engine that reports no paged cache (no `total_kv_blocks` or `kv_cache_block_size`: one that
 * keeps each sequence's K/V apart, as the ONNX Runtime engine does) has none to overload: only
 * the short request runs.
 *
 * Every stream must end within `stepTimeoutMs`; otherwise the check fails as `OverloadStalled`
 * naming the streams still open, and cancels them all. The work grows with the cache (more
 * tokens than it holds): on a slow adapter, run the kit on an engine with a small cache.
 */
import { type LLMEngine, RequestContext } from "../contract/engine.ts";
import { kvGeometry } from "../contract/kv_capacity.ts";
import type { EngineConfig, LLMEngineOutput, PreprocessedRequest } from "../contract/types.ts";
import { failAt } from "./assertions.ts";
import { describe } from "./failure.ts";
import { checkShape } from "./support.ts";

/** Most half-length requests the check starts (so a huge cache is not filled for ever). */
export const MAX_FILL = 32;
/** Error types a request may be refused with (before its first chunk) instead of served. */
const REFUSALS = new Set(["InvalidArgument", "ResourceExhausted"]);

interface Plan {
  label: string;
  request: PreprocessedRequest;
  /** Whether the engine may refuse it instead of serving it. */
  mayRefuse: boolean;
  /** Whether it must end without an error (the short request, which fits beside the rest). */
  mustServe?: boolean;
}

/** `n` prompt tokens drawn from `alphabet` (a distinct sequence per `salt`: no shared prefix). */
function tokens(alphabet: readonly number[], n: number, salt: number): number[] {
  let x = (salt * 0x9e3779b1 + 0x7f4a7c15) >>> 0;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return alphabet[(x >>> 8) % alphabet.length]!;
  });
}

function plans(config: EngineConfig, prompt: readonly number[]): Plan[] {
  const kv = kvGeometry(config);
  const alphabet = [...new Set(prompt)];
  const request = (ids: number[], maxTokens: number): PreprocessedRequest => ({
    model: config.model,
    token_ids: ids,
    stop_conditions: { max_tokens: maxTokens, ignore_eos: true },
    sampling_options: {},
    output_options: {},
    eos_token_ids: [],
    annotations: [],
  });
  const short = {
    label: "the short request",
    request: request([...prompt], 8),
    mayRefuse: false,
    mustServe: true,
  };
  if (kv === undefined) return [short];
  const cache = kv.numBlocks * kv.blockSize;
  const longest = Math.min(config.context_length ?? cache, cache);
  const long = Math.max(1, longest - 8), half = Math.ceil(longest / 2);
  const fill = Math.min(MAX_FILL, Math.floor(cache / (half + 8)) + 1);
  return [
    {
      label: `a ${long}-token prompt with max_tokens 32`,
      request: request(tokens(alphabet, long, 0), 32),
      mayRefuse: true,
    },
    ...Array.from({ length: fill }, (_, i) => ({
      label: `${half}-token prompt #${i + 1} of ${fill}`,
      request: request(tokens(alphabet, half, i + 1), 8),
      mayRefuse: true,
    })),
    short,
  ];
}

/** Run one stream to its end, checking how it ended; `status` tells a timeout where it was. */
async function run(
  engine: LLMEngine,
  plan: Plan,
  ctx: RequestContext,
  status: { text: string },
): Promise<void> {
  const chunks: LLMEngineOutput[] = [];
  status.text = "no chunk yet";
  try {
    for await (const c of engine.generate(plan.request, ctx)) {
      chunks.push(c);
      status.text = `${chunks.length} chunk(s), no terminal one`;
    }
  } catch (e) {
    const type = (e as { type?: unknown }).type;
    if (chunks.length === 0 && plan.mayRefuse && typeof type === "string" && REFUSALS.has(type)) {
      status.text = `refused (${type})`;
      return;
    }
    throw failAt(
      chunks.length === 0
        ? "kv_cache_overload/no-error-before-chunk"
        : "kv_cache_overload/no-error-after-chunk",
      `${plan.label}, beside more work than the KV cache holds: ${describe(e)}`,
    );
  }
  checkShape(chunks, {
    chunks: "kv_cache_overload/chunks",
    terminal: "kv_cache_overload/terminal",
    last: "kv_cache_overload/terminal-last",
  }, plan.label);
  const reason = chunks[chunks.length - 1]!.finish_reason!;
  // The kit cancels only once the step's bound has passed, and then no longer listens.
  if (reason === "cancelled" && !ctx.signal.aborted) {
    throw failAt("kv_cache_overload/not-cancelled", `${plan.label} ended cancelled`);
  }
  if (plan.mustServe && typeof reason === "object") {
    throw failAt(
      "kv_cache_overload/short-served",
      `${plan.label} ended with ${JSON.stringify(reason)}`,
    );
  }
  status.text = `ended (${JSON.stringify(reason)})`;
}

/**
 * Start the check's requests on a started `engine` (whose `start()` returned `config`) and wait
 * for every stream to end, at most `timeoutMs`.
 */
export async function checkOverload(
  engine: LLMEngine,
  config: EngineConfig,
  prompt: readonly number[],
  timeoutMs: number,
): Promise<void> {
  const all = plans(config, prompt);
  const ctxs = all.map(() => new RequestContext());
  const status = all.map(() => ({ text: "not started" }));
  const runs = all.map((p, i) => run(engine, p, ctxs[i]!, status[i]!));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((
    r,
  ) => (timer = setTimeout(() => r("timeout"), timeoutMs)));
  try {
    const first = await Promise.race([Promise.all(runs), timeout]);
    if (first !== "timeout") return;
    const open = all.flatMap((p, i) =>
      status[i]!.text.startsWith("ended") || status[i]!.text.startsWith("refused")
        ? []
        : [`${p.label}: ${status[i]!.text}`]
    );
    const kv = kvGeometry(config);
    const size = kv ? `${kv.numBlocks} blocks of ${kv.blockSize}` : "size not reported";
    throw failAt(
      "kv_cache_overload/ends",
      `${all.length} requests against a KV cache of ${size}, context ${
        config.context_length ?? "not reported"
      }: after ${timeoutMs} ms ${open.length} stream(s) had not ended (${open.join("; ")})`,
    );
  } finally {
    clearTimeout(timer);
    // Whatever happened, nothing of the check keeps running in the engine (the kit cleans the
    // engine up next; a stream that ignores its cancellation is not waited for).
    for (const ctx of ctxs) ctx.stop();
  }
}
