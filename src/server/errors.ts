/** OpenAI-style error responses: `{"error": {"message", "type", "param", "code"}}`. */
import { EngineError } from "../contract/errors.ts";

export class HttpError extends Error {
  override readonly name = "HttpError";
  constructor(
    readonly status: number,
    message: string,
    readonly type = "invalid_request_error",
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }

  static badRequest(message: string, param: string | null = null): HttpError {
    return new HttpError(400, message, "invalid_request_error", param);
  }

  /** The HTTP status an engine error maps to. */
  static fromEngine(e: EngineError): HttpError {
    switch (e.type) {
      case "InvalidArgument":
        return new HttpError(400, e.message, "invalid_request_error");
      case "ResourceExhausted":
        return new HttpError(429, e.message, "rate_limit_error");
      case "EngineShutdown":
      case "Disconnected":
      case "CannotConnect":
        return new HttpError(503, e.message, "service_unavailable");
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

  response(headers: HeadersInit = {}): Response {
    return Response.json(this.body(), { status: this.status, headers });
  }
}
