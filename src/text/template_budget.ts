/**
 * Rendering a chat template under a budget. A template is code from a model repository, and
 * `@huggingface/jinja` runs it synchronously on the calling thread, so a wall-clock timer could
 * never interrupt it. Instead the render runs through a subclass of its `Interpreter` whose
 * `evaluate` (called for every node of the template, loop bodies included) counts steps (a list
 * costs one per item), checks the clock and measures every value it produces, so an overrun
 * lasts at most one node's own work; `range` is replaced by one
 * that refuses long ranges before building them, and numeric arguments of filters and calls
 * (`indent(width)`, `tojson(indent=...)`) are bounded before the filter allocates. The same
 * interpreter gives strings Python's `strip`/`lstrip`/`rstrip` and `trim` (template_strings.ts).
 */
import { Environment, Interpreter, type Template } from "@huggingface/jinja";
import { EngineError } from "../contract/errors.ts";
import {
  pythonStrftime,
  pythonStrip,
  type RuntimeLike,
  STRIP_METHODS,
  stripChars,
} from "./template_strings.ts";

/** Limits on one chat-template render; exceeding one throws `InvalidArgument`. */
export interface RenderBudget {
  /** Template nodes evaluated, loop iterations included. */
  maxSteps?: number;
  /** Length of any string the template builds, the output included (UTF-16 code units). */
  maxChars?: number;
  /** Length of any list the template builds (`range(n)` included). */
  maxItems?: number;
  /** Wall-clock milliseconds, checked at every step. */
  timeoutMs?: number;
}

/** Generous for any real chat template (they take hundreds of steps per message). */
export const DEFAULT_RENDER_BUDGET: Readonly<Required<RenderBudget>> = {
  maxSteps: 2_000_000,
  maxChars: 4 * 1024 * 1024,
  maxItems: 100_000,
  timeoutMs: 2_000,
};

type Statement = Parameters<Interpreter["evaluate"]>[0];
type Value = ReturnType<Interpreter["evaluate"]>;
type Evaluated = [Value[], Map<string, Value>];
type ArgsFn = (args: unknown, env: Environment) => Evaluated;
type FilterFn = (operand: Value, filter: Node, env: Environment) => Value;
type ValueCtor = new (value: unknown) => Value;

/** The fields of the syntax nodes read here (`@huggingface/jinja`'s AST, structurally). */
interface Node {
  type: string;
  value?: unknown;
  object?: Node;
  property?: Node;
  computed?: boolean;
  callee?: Node;
  args?: Node[];
}

/** `s.strip(...)`, `s.lstrip(...)` or `s.rstrip(...)`: the node of `s`, else undefined. */
function stripTarget(node: Node | undefined): Node | undefined {
  if (node?.type !== "MemberExpression" || node.computed || node.property?.type !== "Identifier") {
    return undefined;
  }
  return STRIP_METHODS.has(node.property.value as string) ? node.object : undefined;
}

/** Replace a string value's strip methods by Python's (on that value only). */
function withPythonStrips(value: Value & { builtins: Map<string, Value> }): void {
  const own = new Map(value.builtins);
  const fn = own.get("strip")?.constructor as ValueCtor | undefined;
  if (fn === undefined) return;
  const str = value.constructor as ValueCtor;
  const s = value.value as string;
  for (const [name, side] of STRIP_METHODS) {
    const call = (args: RuntimeLike[]) => new str(pythonStrip(s, stripChars(name, args), side));
    own.set(name, new fn(call));
  }
  Object.defineProperty(value, "builtins", { value: own });
}

function over(what: string): EngineError {
  return new EngineError("ResourceExhausted", `chat template: ${what}`);
}

class BudgetInterpreter extends Interpreter {
  #steps = 0;
  /** Nodes whose string value gets Python's strip methods, and the values that have them. */
  readonly #stripTargets = new WeakSet<Node>();
  readonly #stripped = new WeakSet<object>();
  readonly #deadline: number;
  readonly #limits: Required<RenderBudget>;

  constructor(env: Environment, limits: Required<RenderBudget>) {
    super(env);
    this.#limits = limits;
    this.#deadline = performance.now() + limits.timeoutMs;
    // Filters read their numeric arguments through this (private in the typings) method; bound
    // them before `" ".repeat(width)` runs. Skipped if a later version renames it.
    const proto = Interpreter.prototype as unknown as { evaluateArguments?: ArgsFn };
    const inner = proto.evaluateArguments;
    if (typeof inner === "function") {
      (this as unknown as { evaluateArguments: ArgsFn }).evaluateArguments = (args, env) => {
        const out = inner.call(this, args, env);
        for (const v of [...out[0], ...out[1].values()]) {
          const n = (v as { value?: unknown }).value;
          if (typeof n === "number" && Math.abs(n) > limits.maxChars) {
            throw over(`argument ${n} exceeds the budget of ${limits.maxChars}`);
          }
        }
        return out;
      };
    }
    // `| trim` and `| trim(chars)` on a string: Python's `str.strip`. Like the strip methods
    // (`evaluate`), this reaches into the library's internals; if a version renames them, the
    // family templates' whitespace cases in chat_templates_test.ts fail.
    const filters = proto as unknown as { applyFilter?: FilterFn };
    const applyFilter = filters.applyFilter;
    if (typeof applyFilter === "function") {
      (this as unknown as { applyFilter: FilterFn }).applyFilter = (operand, filter, env) => {
        const name = filter.type === "CallExpression" ? filter.callee?.value : filter.value;
        if (operand.type !== "StringValue" || name !== "trim") {
          return applyFilter.call(this, operand, filter, env);
        }
        let chars: string | null = null;
        if (filter.type === "CallExpression") {
          const [args, kwargs] = (this as unknown as { evaluateArguments: ArgsFn })
            .evaluateArguments(filter.args ?? [], env);
          const named = kwargs.get("chars");
          chars = stripChars("trim", named === undefined ? args : [named, ...args]);
        }
        const str = operand.constructor as ValueCtor;
        return new str(pythonStrip(operand.value as string, chars, "both"));
      };
    }
  }

  override evaluate(statement: Statement, environment: Environment): Value {
    if (++this.#steps > this.#limits.maxSteps) {
      throw over(`more than ${this.#limits.maxSteps} steps`);
    }
    if (performance.now() > this.#deadline) {
      throw over(`rendering took more than ${this.#limits.timeoutMs} ms`);
    }
    const target = stripTarget(statement as Node | undefined);
    if (target !== undefined) this.#stripTargets.add(target);
    const value = super.evaluate(statement, environment);
    if (
      value.type === "StringValue" && this.#stripTargets.has(statement as Node) &&
      !this.#stripped.has(value)
    ) {
      this.#stripped.add(value);
      withPythonStrips(value as Value & { builtins: Map<string, Value> });
    }
    const v = (value as { value?: unknown }).value;
    if (typeof v === "string" && v.length > this.#limits.maxChars) {
      throw over(`a string of ${v.length} characters exceeds ${this.#limits.maxChars}`);
    }
    if (Array.isArray(v)) {
      if (v.length > this.#limits.maxItems) {
        throw over(`a list of ${v.length} items exceeds ${this.#limits.maxItems}`);
      }
      // Building a list costs a step per item (a loop over it may run without evaluating).
      this.#steps += v.length;
    }
    return value;
  }
}

/** Jinja's `range`, refusing more than `maxItems` values before building any. */
function boundedRange(maxItems: number) {
  return (a: unknown, b?: unknown, c?: unknown): number[] => {
    const [start, stop, step] = b === undefined ? [0, a, 1] : [a, b, c ?? 1];
    if (![start, stop, step].every((x) => typeof x === "number" && Number.isInteger(x))) {
      throw EngineError.invalidArgument("chat template: range() takes integers");
    }
    const [s, e, d] = [start as number, stop as number, step as number];
    if (d === 0) throw EngineError.invalidArgument("chat template: range() step must not be zero");
    const n = Math.max(0, Math.ceil((e - s) / d));
    if (n > maxItems) throw over(`range of ${n} items exceeds ${maxItems}`);
    return Array.from({ length: n }, (_, i) => s + i * d);
  };
}

/** `strftime_now(format)`: Python's `datetime.strftime` of `now()`. */
function strftimeNow(now: () => Date, format: unknown): string {
  if (typeof format !== "string") {
    throw EngineError.invalidArgument("chat template: strftime_now() takes a format string");
  }
  return pythonStrftime(now(), format);
}

/**
 * A template parsed by `@huggingface/jinja` (its `Template`). Named structurally so that Kiln's
 * declaration files do not import jinja's, which do not type check under `moduleResolution:
 * "nodenext"` (extensionless relative imports).
 */
export interface ParsedTemplate {
  /** The template's syntax tree. */
  readonly parsed: unknown;
}

/**
 * Render a parsed template with `items` as its variables, within `budget` (missing limits from
 * {@linkcode DEFAULT_RENDER_BUDGET}) and `now` as `strftime_now`'s clock. Over budget is
 * `ResourceExhausted`; the template's own errors are thrown as they are (the caller wraps them).
 */
export function renderWithBudget(
  template: ParsedTemplate,
  items: Record<string, unknown>,
  budget: RenderBudget = {},
  now: () => Date = () => new Date(),
): string {
  const limits = { ...DEFAULT_RENDER_BUDGET, ...budget };
  const env = new Environment();
  for (const name of ["false", "False"]) env.set(name, false);
  for (const name of ["true", "True"]) env.set(name, true);
  for (const name of ["none", "None"]) env.set(name, null);
  env.set("raise_exception", (message: unknown) => {
    const why = typeof message === "string" ? message : "raise_exception";
    throw EngineError.invalidArgument(`chat template: ${why}`);
  });
  env.set("range", boundedRange(limits.maxItems));
  env.set("strftime_now", (format: unknown) => strftimeNow(now, format));
  for (const [key, value] of Object.entries(items)) env.set(key, value);
  const out = new BudgetInterpreter(env, limits).run(template.parsed as Template["parsed"]).value;
  return typeof out === "string" ? out : "";
}
