/**
 * The house's own lint rules, run by `deno lint` (deno.json `lint.plugins`):
 *
 * - `house/function-length`: no function in published code (`src/`, tests left out) whose body
 *   is over {@linkcode MAX_FUNCTION_LINES} lines. A longer function is split where it has real
 *   stages (parse, check, build; one helper per phase), as `docs/layout.md` asks.
 *
 * @module
 */

/** The longest function body (its braces' lines included) the house accepts in `src/`. */
export const MAX_FUNCTION_LINES = 80;

/** Whether `filename` is published code: under `src/`, not a test or a test-only module. */
export function isPublished(filename: string): boolean {
  const path = filename.replaceAll("\\", "/");
  const name = path.slice(path.lastIndexOf("/") + 1);
  return path.includes("/src/") && !name.endsWith("_test.ts") && !name.startsWith("test_");
}

type FunctionNode =
  | Deno.lint.FunctionDeclaration
  | Deno.lint.FunctionExpression
  | Deno.lint.ArrowFunctionExpression;

const plugin: Deno.lint.Plugin = {
  name: "house",
  rules: {
    "function-length": {
      create(context) {
        if (!isPublished(context.filename)) return {};
        const check = (node: FunctionNode) => {
          const body = node.body;
          if (body === null || body.type !== "BlockStatement") return;
          const text = context.sourceCode.text.slice(body.range[0], body.range[1]);
          const lines = text.split("\n").length;
          if (lines > MAX_FUNCTION_LINES) {
            context.report({
              node,
              message: `function body of ${lines} lines (at most ${MAX_FUNCTION_LINES})`,
              hint: "split it into helpers, one per stage",
            });
          }
        };
        return {
          FunctionDeclaration: check,
          FunctionExpression: check,
          ArrowFunctionExpression: check,
        };
      },
    },
  },
};

export default plugin;
