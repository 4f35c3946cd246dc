/**
 * One error class for everything an engine reports, carrying Dynamo's error types.
 * It serialises to plain data and back, so it survives a worker boundary.
 */
import { describe } from "./describe.ts";

/** Dynamo's error types (`dynamo_runtime::error::ErrorType`). */
export const ERROR_TYPES = [
  "Unknown",
  "InvalidArgument",
  "CannotConnect",
  "Disconnected",
  "ConnectionTimeout",
  "ResponseTimeout",
  "Cancelled",
  "ResourceExhausted",
  "EngineShutdown",
  "StreamIncomplete",
] as const;

/** One of Dynamo's error types, e.g. `InvalidArgument`. */
export type ErrorType = typeof ERROR_TYPES[number];

/** Plain-data form of an {@linkcode EngineError} (structured-clone and JSON safe). */
export interface SerializedError {
  /** The original error's class name (`EngineError`, `TypeError`, ...). */
  name: string;
  /** Dynamo error type; `Unknown` for anything not an `EngineError`. */
  type: ErrorType;
  /** The error message. */
  message: string;
  /** The stack trace, when the runtime recorded one. */
  stack?: string;
  /** The serialised `cause` chain (at most 8 levels deep). */
  cause?: SerializedError;
  /** The request field the error is about (an `EngineError`'s {@linkcode EngineError.param}). */
  param?: string;
}

/** Whether `value` is one of {@linkcode ERROR_TYPES}. */
export function isErrorType(value: unknown): value is ErrorType {
  return typeof value === "string" && (ERROR_TYPES as readonly string[]).includes(value);
}

/** An error with a Dynamo error type: what engines throw and streams end with. */
export class EngineError extends Error {
  /** Always `"EngineError"`. */
  override readonly name = "EngineError";
  /** Dynamo error type of the failure. */
  readonly type: ErrorType;
  /**
   * The request field the error is about (`max_tokens`, `response_format`), when it is about
   * one: what OpenAI's error body calls `param`.
   */
  readonly param?: string;

  /**
   * An error of Dynamo type `type`.
   *
   * @param type Dynamo error type.
   * @param message Human-readable description.
   * @param options `cause`: the underlying error, if any; `param`: the request field at fault.
   */
  constructor(type: ErrorType, message: string, options?: { cause?: unknown; param?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.type = type;
    if (options?.param !== undefined) this.param = options.param;
  }

  /** An `InvalidArgument` error: the caller's input was rejected. */
  static invalidArgument(message: string, cause?: unknown): EngineError {
    return new EngineError("InvalidArgument", message, { cause });
  }

  /**
   * An `InvalidArgument` error about request field `param`: the message is `param: why`.
   *
   * @param param The field, as the request names it.
   * @param why What is wrong with it.
   * @param cause The underlying error, if any.
   */
  static invalidField(param: string, why: string, cause?: unknown): EngineError {
    return new EngineError("InvalidArgument", `${param}: ${why}`, { cause, param });
  }

  /** An `EngineShutdown` error: the engine is not running (not started, stopped or drained). */
  static shutdown(message: string): EngineError {
    return new EngineError("EngineShutdown", message);
  }

  /** Wrap anything thrown into an EngineError, keeping an EngineError as it is. */
  static from(error: unknown, type: ErrorType = "Unknown"): EngineError {
    if (error instanceof EngineError) return error;
    if (error instanceof Error) {
      const wrapped = new EngineError(type, `${error.name}: ${error.message}`, { cause: error });
      if (error.stack !== undefined) wrapped.stack = error.stack;
      return wrapped;
    }
    return new EngineError(type, typeof error === "string" ? error : describe(error, 200));
  }

  /**
   * `InvalidArgument` for input a library threw on: the message names the library and the
   * error's class (`tokenizer.json: @huggingface/tokenizers threw TypeError: ...`) and `cause`
   * keeps the error, so that it can be told apart from Kiln's own validation. An `EngineError`
   * (Kiln's own, thrown from a callback the library called) is returned as it is.
   *
   * @param library The library's package name.
   * @param where What was being read or done (`tokenizer.json`, `chat template`).
   * @param error What the library threw.
   */
  static fromLibrary(library: string, where: string, error: unknown): EngineError {
    if (error instanceof EngineError) return error;
    const what = error instanceof Error
      ? `${error.name}: ${error.message}`
      : `a thrown ${describe(error, 200)}`;
    return EngineError.invalidArgument(`${where}: ${library} threw ${what}`, error);
  }

  /** The plain-data form, so `JSON.stringify` keeps type, message, param, stack and cause. */
  toJSON(): SerializedError {
    return serializeError(this);
  }

  /** Rebuild an EngineError from its plain-data form. */
  static fromJSON(data: SerializedError): EngineError {
    const cause = data.cause === undefined ? undefined : EngineError.fromJSON(data.cause);
    const error = new EngineError(isErrorType(data.type) ? data.type : "Unknown", data.message, {
      cause,
      ...(typeof data.param === "string" ? { param: data.param } : {}),
    });
    if (data.stack !== undefined) error.stack = data.stack;
    return error;
  }
}

/** Serialise any thrown value; non-EngineErrors become type `Unknown` with their name kept. */
export function serializeError(error: unknown, depth = 0): SerializedError {
  if (error instanceof Error) {
    const out: SerializedError = {
      name: error.name,
      type: error instanceof EngineError ? error.type : "Unknown",
      message: error.message,
    };
    if (error instanceof EngineError && error.param !== undefined) out.param = error.param;
    if (error.stack !== undefined) out.stack = error.stack;
    if (error.cause !== undefined && depth < 8) out.cause = serializeError(error.cause, depth + 1);
    return out;
  }
  return {
    name: "Error",
    type: "Unknown",
    message: typeof error === "string" ? error : describe(error, 200),
  };
}

/** Whether `value` has the shape of a {@linkcode SerializedError}. */
export function isSerializedError(value: unknown): value is SerializedError {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.name === "string" && typeof v.message === "string" && isErrorType(v.type);
}
