/**
 * Speculative decoding's counters in Prometheus text, named as vLLM's `spec_decode_*` counters
 * under Dynamo's component prefix:
 * `dynamo_component_spec_decode_num_drafts_total`, `..._num_draft_tokens_total`,
 * `..._num_accepted_tokens_total` and `..._num_accepted_tokens_per_pos_total{position}`.
 * The acceptance rate is accepted over draft tokens; the mean accepted length per step is
 * 1 + accepted / drafts. Fed with an engine's cumulative counts (in the engine, or from the worker
 * that runs it), it adds what changed since the last report.
 */
import type { EngineMetrics } from "../contract/metrics/engine_metrics.ts";
import type { Counter } from "../contract/metrics/registry.ts";
import type { SpeculationCounts } from "./speculation.ts";

interface Families {
  drafts: Counter;
  draftTokens: Counter;
  accepted: Counter;
  perPos: Counter;
}

/** The counters of one metrics handle (registered once, however many engines bind it). */
const registered = new WeakMap<EngineMetrics, Families>();

function families(metrics: EngineMetrics): Families {
  let f = registered.get(metrics);
  if (f === undefined) {
    const m = metrics.model;
    f = {
      drafts: metrics.counter(
        "spec_decode_num_drafts",
        "Steps that verified a speculative draft.",
        m,
      ),
      draftTokens: metrics.counter(
        "spec_decode_num_draft_tokens",
        "Speculative draft tokens verified.",
        m,
      ),
      accepted: metrics.counter(
        "spec_decode_num_accepted_tokens",
        "Speculative draft tokens accepted.",
        m,
      ),
      perPos: metrics.counter(
        "spec_decode_num_accepted_tokens_per_pos",
        "Speculative draft tokens accepted, by position in the draft (0: the first).",
        m,
        ["position"],
      ),
    };
    registered.set(metrics, f);
  }
  return f;
}

export class SpeculationMetrics {
  #counters: Families | undefined;
  #last: SpeculationCounts | undefined;

  /** Count on `metrics` from now on (what was counted before is added at the next report). */
  bind(metrics: EngineMetrics): void {
    this.#counters = families(metrics);
  }

  /** The engine's counts so far; nothing while unbound or when speculation is off. */
  report(now: SpeculationCounts | undefined): void {
    const c = this.#counters;
    if (c === undefined || now === undefined || now.numSpecTokens === 0) return;
    const last = this.#last;
    c.drafts.inc(now.numDrafts - (last?.numDrafts ?? 0));
    c.draftTokens.inc(now.numDraftTokens - (last?.numDraftTokens ?? 0));
    c.accepted.inc(now.numAcceptedTokens - (last?.numAcceptedTokens ?? 0));
    now.numAcceptedTokensPerPos.forEach((n, i) => {
      c.perPos.inc(n - (last?.numAcceptedTokensPerPos[i] ?? 0), { position: String(i) });
    });
    this.#last = structuredClone(now);
  }
}
