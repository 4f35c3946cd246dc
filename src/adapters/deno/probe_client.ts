/**
 * What the probe's cases share: its options, the `ProbeCase` shape and `Probe`, the client that
 * sends a running server requests (fetch, raw HTTP, a metric read from `/metrics`).
 */
import { rawRequest, type RawResponse } from "./raw_http.ts";

/** How `deno task probe` reaches the server and what the server was started with. */
export interface ProbeOptions {
  base: URL;
  apiKey?: string;
  /** The served model (asked of `/v1/models` when not given). */
  model?: string;
  /** The server's body size limit in bytes (1 MiB by default, as `serve`'s). */
  maxBodyBytes: number;
  /** How long to wait for a one-byte-a-second body to be refused, in seconds. */
  slowWaitSeconds: number;
  /** The server's `--max-queued`: this many plus 4 streams at once must see a 429. */
  maxQueued: number;
  /** `max_tokens` of the streams that must still be running when dropped (fits the context). */
  longTokens: number;
  /** An origin the server lists for CORS (`serve --cors-origins`): its preflight must succeed. */
  corsOrigin?: string;
}

/** One hostile request and its check: `undefined` when the server held, else what went wrong. */
export interface ProbeCase {
  name: string;
  run(p: Probe): Promise<string | undefined>;
}

/** What the cases share: the options, the model name and request helpers. */
export class Probe {
  constructor(readonly o: ProbeOptions, readonly model: string) {}

  get host(): string {
    return this.o.base.host;
  }

  auth(): Record<string, string> {
    return this.o.apiKey === undefined ? {} : { authorization: `Bearer ${this.o.apiKey}` };
  }

  authLines(): string[] {
    return this.o.apiKey === undefined ? [] : [`Authorization: Bearer ${this.o.apiKey}`];
  }

  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    return await fetch(new URL(path, this.o.base), {
      ...init,
      headers: { ...this.auth(), ...(init.headers as Record<string, string> | undefined) },
    });
  }

  /** POST a body with a content type (none when `type` is undefined). */
  async post(path: string, body: string | Uint8Array, type?: string): Promise<Response> {
    const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
    return await this.fetch(path, {
      method: "POST",
      body: bytes as BodyInit,
      headers: type === undefined ? {} : { "content-type": type },
    });
  }

  completion(extra: Record<string, unknown> = {}): string {
    return JSON.stringify({ model: this.model, prompt: "Hello", max_tokens: 4, ...extra });
  }

  raw(head: string[], o: Parameters<typeof rawRequest>[2] = {}): Promise<RawResponse | undefined> {
    return rawRequest(this.o.base, head, o);
  }

  /** A metric's value summed over the series whose labels include every one of `match`. */
  async metric(name: string, match: string[] = []): Promise<number | undefined> {
    const res = await this.fetch("/metrics");
    if (res.status !== 200) return void (await res.body?.cancel());
    let sum = 0;
    for (const l of (await res.text()).split("\n")) {
      if (!l.startsWith(`${name}{`) && !l.startsWith(`${name} `)) continue;
      if (match.every((m) => l.includes(m))) sum += Number(l.slice(l.lastIndexOf(" ") + 1));
    }
    return sum;
  }
}
