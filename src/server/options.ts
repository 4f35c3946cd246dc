/** The settings of a `KilnServer` (`app.ts`). */
import type { LLMEngine } from "../contract/engine.ts";
import type { EngineMetrics } from "../contract/metrics/engine_metrics.ts";
import type { RequestMetrics } from "../metrics/request_metrics.ts";
import type { AccessOptions } from "./access.ts";

/**
 * What the server runs on and how it answers. The access fields (`access.ts`): `bindHost`, the
 * address it listens on (loopback, with no `allowedHosts`: only loopback `Host` names are
 * answered, 421 otherwise); `allowedHosts`, names (no port) answered besides (`["*"]`: any);
 * `corsOrigins`, exact origins given CORS. A foreign `Origin` gets 403 whenever one of them is
 * set or the bind address is loopback; with none (in-process, or a non-loopback bind) any `Host`
 * and `Origin` are answered, as before.
 */
export interface ServerOptions extends AccessOptions {
  engine: LLMEngine;
  metrics: EngineMetrics;
  requests: RequestMetrics;
  /** Required as a bearer token on every route but `/health` when set. */
  apiKey?: string;
  /** Request bodies over this get 413 (default 1 MiB). */
  maxBodyBytes?: number;
  /** A body not received whole this many milliseconds after the headers gets 408 (10 s). */
  bodyTimeoutMs?: number;
  /** Requests in progress beyond this get 429 (default 64). */
  maxQueued?: number;
  /** Largest `n` (default 8). */
  maxN?: number;
  /**
   * Responses kept for `previous_response_id` and `GET /v1/responses/{id}` (default 256; 0 keeps
   * none); the oldest is dropped first.
   */
  storedResponses?: number;
  /** How long a kept response lasts, in milliseconds (default one hour). */
  storedResponseMs?: number;
  /**
   * The address the HTTP listener is bound to (`serve --host`), e.g. `127.0.0.1` or `0.0.0.0`.
   * With a loopback address and no {@linkcode ServerOptions.allowedHosts}, only requests whose
   * `Host` is a loopback name are answered.
   */
  bindHost?: string;
  /**
   * The `Host` names the server answers (`serve --allowed-hosts`); `"*"` answers any. When
   * absent, the default follows {@linkcode ServerOptions.bindHost}.
   */
  allowedHosts?: readonly string[];
  /**
   * Exact origins (`https://app.example:8443`) allowed cross-origin requests
   * (`serve --cors-origins`); CORS is off when absent.
   */
  corsOrigins?: readonly string[];
}
