/** A request field refused by name: an `InvalidArgument` that also says which field. */
import { EngineError } from "../contract/errors.ts";

/** `InvalidArgument` whose message starts with the field; `param` names it (OpenAI's `param`). */
export class FieldError extends EngineError {
  /** `field: why`. */
  constructor(param: string, why: string, cause?: unknown) {
    super(
      "InvalidArgument",
      `${param}: ${why}`,
      cause === undefined ? { param } : { cause, param },
    );
  }
}
