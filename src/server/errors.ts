/** OpenAI-style error responses: `{"error": {"message", "type", "param", "code"}}`. */
import { EngineError } from "../contract/errors.ts";

/** Longest error message sent back (a bad value is quoted in it, never echoed whole). */
export const MAX_MESSAGE = 512;

/** `s` cut to `max` characters, marking the cut. */
export function clip(s: string, max = MAX_MESSAGE): string {
  return s.length <= max ? s : `${s.slice(0, max)}… (${s.length - max} more characters)`;
}

/**
 * A client's value as JSON, short enough to quote in a message (`NaN` and `Infinity`, which JSON
 * has no form for, as themselves rather than JSON's `null`).
 */
export const quote = (v: unknown, max = 64): string =>
  clip(typeof v === "number" ? String(v) : JSON.stringify(v) ?? String(v), max);

export class HttpError extends Error {
  override readonly name = "HttpError";
  /** Extra response headers (`Retry-After`, `Allow`, `WWW-Authenticate`). */
  headers: Record<string, string> = {};

  constructor(
    readonly status: number,
    message: string,
    readonly type = "invalid_request_error",
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(clip(message));
  }

  static badRequest(message: string, param: string | null = null): HttpError {
    return new HttpError(400, message, "invalid_request_error", param);
  }

  /** 405: `path` takes only the methods in `allow` (also sent as `Allow`). */
  static notAllowed(path: string, allow: string): HttpError {
    return new HttpError(
      405,
      `${path} takes ${allow}`,
      "invalid_request_error",
      null,
      "method_not_allowed",
    )
      .with({ allow });
  }

  /** This error with `headers` added to its response. */
  with(headers: Record<string, string>): this {
    Object.assign(this.headers, headers);
    return this;
  }

  /** The HTTP status an engine error maps to. */
  static fromEngine(e: EngineError): HttpError {
    switch (e.type) {
      case "InvalidArgument":
        return new HttpError(
          400,
          e.message,
          "invalid_request_error",
          e.param ?? null,
        );
      case "ResourceExhausted":
        return new HttpError(429, e.message, "rate_limit_error").with({ "retry-after": "1" });
      case "EngineShutdown":
      case "Disconnected":
      case "CannotConnect":
        return new HttpError(503, e.message, "service_unavailable").with({ "retry-after": "1" });
      default:
        return new HttpError(500, e.message, "internal_error");
    }
  }

  static from(e: unknown): HttpError {
    if (e instanceof HttpError) return e;
    if (e instanceof EngineError) return HttpError.fromEngine(e);
    return new HttpError(500, e instanceof Error ? e.message : String(e), "internal_error");
  }

  body(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return {
      error: { message: this.message, type: this.type, param: this.param, code: this.code },
    };
  }

  response(): Response {
    return Response.json(this.body(), { status: this.status, headers: this.headers });
  }
}
