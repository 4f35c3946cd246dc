/** Hostile values the untrusted-input tests feed every parser (issue 12), and their assertion. */
import { ok } from "node:assert/strict";
import { EngineError } from "../../src/contract/errors.ts";

/** An array nested `n` deep, as JSON.parse builds it from untrusted text. */
export function deepArray(n = 2750): unknown {
  return JSON.parse("[".repeat(n) + "]".repeat(n));
}

/** An object whose `toString` is not a function. */
export const TO_STRING: unknown = JSON.parse('{"toString":1}');

/** An `assert.throws` check: `InvalidArgument` whose message mentions every needle. */
export function invalid(...needles: string[]): (e: unknown) => boolean {
  return (e: unknown) => {
    ok(e instanceof EngineError && e.type === "InvalidArgument", `not InvalidArgument: ${e}`);
    for (const n of needles) ok(e.message.includes(n), `${e.message} should mention ${n}`);
    return true;
  };
}
