/**
 * Named engine factories for the conformance CLI and pages: `mock`, `broken:<Kind>`, and any
 * engine a later module registers (`registerEngine("webgpu", ...)`).
 */
import type { LLMEngine } from "../contract/engine.ts";
import { MockEngine } from "../engines/mock/mock_engine.ts";
import { brokenEngine } from "./broken.ts";
import { FAILURE_KINDS, isFailureKind } from "./failure.ts";

/** Builds a factory from CLI options (e.g. `--model DIR`). */
export type EngineMaker = (
  options: Record<string, string>,
) => Promise<() => LLMEngine> | (() => LLMEngine);

const makers = new Map<string, EngineMaker>([["mock", () => () => new MockEngine()]]);

/** Make `name` available to {@linkcode engineFactory} (replacing an engine of the same name). */
export function registerEngine(name: string, maker: EngineMaker): void {
  makers.set(name, maker);
}

/** Every engine name {@linkcode engineFactory} knows, `broken:<Kind>` ones included. */
export function engineNames(): string[] {
  return [...makers.keys(), ...FAILURE_KINDS.map((k) => `broken:${k}`)];
}

/** The factory for `name`, or undefined when no engine has that name. */
export async function engineFactory(
  name: string,
  options: Record<string, string> = {},
): Promise<(() => LLMEngine) | undefined> {
  if (name.startsWith("broken:")) {
    const kind = name.slice("broken:".length);
    return isFailureKind(kind) ? brokenEngine(kind) : undefined;
  }
  const maker = makers.get(name);
  return maker ? await maker(options) : undefined;
}
