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

export type ErrorType = typeof ERROR_TYPES[number];

/** Plain-data form of an {@linkcode EngineError} (structured-clone and JSON safe). */
export interface SerializedError {
  name: string;
  type: ErrorType;
  message: string;
  stack?: string;
  cause?: SerializedError;
}

export function isErrorType(value: unknown): value is ErrorType {
  return typeof value === "string" && (ERROR_TYPES as readonly string[]).includes(value);
}

export class EngineError extends Error {
  override readonly name = "EngineError";
  readonly type: ErrorType;

  constructor(type: ErrorType, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.type = type;
  }

  static invalidArgument(message: string, cause?: unknown): EngineError {
    return new EngineError("InvalidArgument", message, { cause });
  }

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

  toJSON(): SerializedError {
    return serializeError(this);
  }

  /** Rebuild an EngineError from its plain-data form. */
  static fromJSON(data: SerializedError): EngineError {
    const cause = data.cause === undefined ? undefined : EngineError.fromJSON(data.cause);
    const error = new EngineError(isErrorType(data.type) ? data.type : "Unknown", data.message, {
      cause,
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

export function isSerializedError(value: unknown): value is SerializedError {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.name === "string" && typeof v.message === "string" && isErrorType(v.type);
}
