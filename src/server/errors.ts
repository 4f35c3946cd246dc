/**
 * OpenAI-style error responses, `{"error": {"message", "type", "param", "code"}}`: the HTTP
 * side's own (401, 404, 405, 413, ...) and, in one place, any `EngineError` (`fromEngine`).
 */
import { EngineError } from "../contract/errors.ts";
import { clip, openAIError } from "../openai/errors.ts";

export { clip, MAX_MESSAGE, quote } from "../openai/errors.ts";

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

  /**
   * The response for an engine error: OpenAI's status, type and `param` for it (see
   * `openAIError`); 429 and 503 with `Retry-After: 1`.
   */
  static fromEngine(e: EngineError): HttpError {
    const { status, message, type, param } = openAIError(e);
    const error = new HttpError(status, message, type, param);
    return status === 429 || status === 503 ? error.with({ "retry-after": "1" }) : error;
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
