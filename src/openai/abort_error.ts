/**
 * The error a non-streamed `create` of Kiln's OpenAI-shaped helpers rejects with when its signal
 * aborts, shaped like the `openai` client's `APIUserAbortError` (same class name, same message)
 * but Kiln's own typed error: an `EngineError` of Dynamo type `Cancelled`.
 * @module
 */
import { EngineError } from "../contract/errors.ts";

/**
 * A request cancelled by its caller's `AbortSignal`: `type` is `Cancelled`, the message is the
 * `openai` client's ("Request was aborted."), and `cause` is the signal's reason.
 */
export class APIUserAbortError extends EngineError {
  /** An abort error whose `cause` is `reason` (the signal's `reason`), when given. */
  constructor(reason?: unknown) {
    super(
      "Cancelled",
      "Request was aborted.",
      reason === undefined ? undefined : { cause: reason },
    );
  }
}
