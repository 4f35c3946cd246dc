/**
 * Where a `KilnServer` (`app.ts`) stands: loading, ready (the engine's config and the model's
 * text side), unavailable (the engine gone), draining; with its requests in flight and the
 * shutdown that cuts them. `/health` answers from it, and every POST checks it first.
 */
import type { EngineConfig } from "../contract/types.ts";
import type { ModelText } from "../text/load.ts";
import { HttpError } from "./errors.ts";
import { InFlight } from "./in_flight.ts";

/** A server's lifecycle state. */
export class ServerState {
  /** The engine's config, once it has started. */
  config: EngineConfig | undefined;
  /** The model's text side, once loaded. */
  text: ModelText | undefined;
  /** The requests in flight. */
  readonly inFlight = new InFlight();
  #draining = false;
  #unavailable: string | undefined;
  /** Aborts every request in flight (the drain deadline passed). */
  readonly #shutdown = new AbortController();

  /** Aborts when the requests in flight are cut. */
  get shutdown(): AbortSignal {
    return this.#shutdown.signal;
  }

  /** The served model's name, once ready. */
  get modelName(): string | undefined {
    return this.config?.served_model_name ?? this.config?.model;
  }

  /** Serving `config` and `text` (again, after `unavailable`). */
  ready(config: EngineConfig, text: ModelText): void {
    this.config = config;
    this.text = text;
    this.#unavailable = undefined;
  }

  /** Not serving until `ready` again (`why`: shown by `/health`). */
  unavailable(why: string): void {
    this.#unavailable = why;
  }

  /** `/health`: 200 `ready`, or 503 `draining`, `loading` or `unavailable` (with the reason). */
  health(): Response {
    const down = (status: string, extra: Record<string, string> = {}) =>
      Response.json({ status, ...extra }, { status: 503, headers: { "retry-after": "5" } });
    if (this.#draining) return down("draining");
    if (!this.config) return down("loading");
    if (this.#unavailable !== undefined) return down("unavailable", { reason: this.#unavailable });
    return Response.json({ status: "ready", model: this.modelName });
  }

  /** 503 when not serving (loading, draining, the engine gone). */
  checkServing(): void {
    const why = this.#draining
      ? "the server is shutting down"
      : !this.config
      ? "the model is still loading"
      : this.#unavailable;
    if (why !== undefined) {
      throw new HttpError(503, why, "service_unavailable").with({ "retry-after": "5" });
    }
  }

  /**
   * Drain: not serving from now; the requests in flight run to the end, or until `graceMs`
   * passes, when each is cut. Resolves once none is left (at most `cutMs` after the cut) with
   * how many were cut.
   */
  async drain(graceMs: number, cutMs: number): Promise<{ cut: number }> {
    this.#draining = true;
    if (await this.inFlight.settled(graceMs)) return { cut: 0 };
    const cut = this.inFlight.size;
    this.#shutdown.abort();
    await this.inFlight.settled(cutMs);
    return { cut };
  }

  /** Not serving from now, and every request in flight cut. */
  abortAll(): void {
    this.#draining = true;
    this.#shutdown.abort();
  }
}
