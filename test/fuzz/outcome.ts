/**
 * What one fuzz run ended with, classified: accepted, refused by Kiln's own validation, refused
 * because a library Kiln called threw (the wrapper's `EngineError` carries the library's error as
 * `cause`), or thrown past Kiln as something that is not an `EngineError` at all.
 *
 * Who threw is read from the stack of the innermost error of the `cause` chain: its first frame
 * in `node_modules/<package>/` names the library; a platform function called from Kiln's code
 * (`JSON.parse`, `TextDecoder.decode`) is named as such; a frame in Kiln's own code is `Kiln code`
 * (a bug in Kiln that a catch-all wrapper turned into a refusal). The file of the first Kiln
 * frame below is where the error came through (a file, as V8 names the same function's frame
 * differently once it is optimized).
 */
import { EngineError, type ErrorType } from "../../src/contract/errors.ts";

/** How a run ended. */
export type Outcome =
  | { kind: "accepted" }
  | {
    kind: "refused";
    /** The EngineError's kind. */
    type: ErrorType;
    /** `Kiln`, or who threw the error the EngineError wraps (`@huggingface/tokenizers`). */
    by: string;
    /** The wrapped error's name (`TypeError`), or `EngineError` when Kiln refused. */
    name: string;
    /** The function that threw, in the library or platform (`new BPE`), if known. */
    site: string;
    /** The Kiln file the error came through, if known. */
    via: string;
    message: string;
  }
  | { kind: "thrown"; by: string; name: string; site: string; via: string; message: string };

/** Errors that say a library crashed on input it did not expect, rather than refused it. */
export const CRASH_NAMES: readonly string[] = ["TypeError", "RangeError", "ReferenceError"];

interface Frame {
  fn: string | undefined;
  file: string;
}

function frames(stack: string): Frame[] {
  const out: Frame[] = [];
  for (const line of stack.split("\n")) {
    const m = /^\s+at (?:async )?(?:(.*?) \((.*)\)|(.*))$/.exec(line);
    if (!m) continue;
    const file = (m[2] ?? m[3] ?? "").replace(/:\d+:\d+$/, "");
    // V8 names a constructor's frame `new X` or, once optimized, `X`: one name for both.
    out.push({ fn: m[1]?.replace(/^new /, ""), file });
  }
  return out;
}

const isNative = (file: string) =>
  file === "<anonymous>" || file === "native" || /^(ext|node):/.test(file);

/** Where an error came from. */
export interface Origin {
  /** The library (`@huggingface/jinja`), platform function (`JSON.parse`) or `Kiln code`. */
  by: string;
  /** The function that threw (`parseAny`). */
  site: string;
  /** The Kiln file the error came through (`chat.ts`), if on the stack. */
  via: string;
}

/** Who threw `error`, in which function, and through which Kiln file, from its stack. */
export function thrower(error: unknown): Origin {
  if (!(error instanceof Error)) return { by: "unknown", site: "", via: "" };
  let origin: { by: string; site: string } | undefined;
  let native: string | undefined;
  for (const f of frames(error.stack ?? "")) {
    const pkg = [...f.file.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)\//g)].at(-1)?.[1];
    if (pkg !== undefined) {
      origin ??= { by: pkg, site: f.fn ?? native ?? "<anonymous>" };
    } else if (isNative(f.file)) {
      native ??= f.fn ?? f.file;
    } else {
      const via = f.file.split("/").at(-1)!;
      if (origin !== undefined) return { ...origin, via };
      return native !== undefined
        ? { by: native, site: native, via }
        : { by: "Kiln code", site: f.fn ?? "<anonymous>", via };
    }
  }
  return { ...(origin ?? { by: native ?? "unknown", site: native ?? "" }), via: "" };
}

const nameOf = (e: unknown) =>
  e instanceof Error ? e.name : e === null ? "null" : `a thrown ${typeof e}`;
const messageOf = (e: unknown) => e instanceof Error ? e.message : String(e);

/** Classify what `run` threw (or that it returned). */
export function classify(thrown: unknown, returned = false): Outcome {
  if (returned) return { kind: "accepted" };
  if (!(thrown instanceof EngineError)) {
    return { kind: "thrown", ...thrower(thrown), name: nameOf(thrown), message: messageOf(thrown) };
  }
  let root: unknown = thrown;
  for (let depth = 0; root instanceof EngineError && root.cause !== undefined && depth < 16;) {
    root = root.cause;
    depth++;
  }
  const base = { kind: "refused" as const, type: thrown.type, message: thrown.message };
  return root instanceof EngineError
    ? { ...base, by: "Kiln", name: "EngineError", site: "", via: "" }
    : { ...base, ...thrower(root), name: nameOf(root) };
}

/**
 * The class a library refusal is counted under, or undefined for an acceptance or Kiln's own
 * refusal: `@huggingface/jinja threw SyntaxError` for an error the library means to throw; for a
 * crash (see {@linkcode CRASH_NAMES}) also the Kiln file it came through, as one library may
 * crash on different inputs in different calls (`... threw TypeError via chat.ts`: parsing a
 * template; via `template_budget.ts`: rendering one).
 */
export function libraryClass(o: Outcome): string | undefined {
  if (o.kind === "accepted" || (o.kind === "refused" && o.by === "Kiln")) return undefined;
  const cls = `${o.by} threw ${o.name}`;
  return CRASH_NAMES.includes(o.name) ? `${cls} via ${o.via || "?"}` : cls;
}

/**
 * One line naming an outcome, as the corpus records it: `accepted`, `InvalidArgument (Kiln)`,
 * `InvalidArgument (@huggingface/jinja threw SyntaxError)`, `not an EngineError (... threw X)`.
 */
export function outcomeLabel(o: Outcome): string {
  if (o.kind === "accepted") return "accepted";
  if (o.kind === "thrown") return `not an EngineError (${libraryClass(o)})`;
  return `${o.type} (${libraryClass(o) ?? "Kiln"})`;
}
