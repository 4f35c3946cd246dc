/**
 * The house lint rules (`scripts/lint/house_rules.ts`) run on planted sources: a function one
 * line over the bound is reported in `src/`, one at the bound is not, and tests are left out; and
 * no file in `src/` or `shaders/` is over 400 lines.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import plugin, { isPublished, MAX_FUNCTION_LINES } from "../scripts/lint/house_rules.ts";

/** A function declaration whose body spans `lines` lines, braces included. */
const fn = (lines: number) => `export function f(): void {\n${"  1;\n".repeat(lines - 2)}}\n`;

const reported = (filename: string, source: string) =>
  Deno.lint.runPlugin(plugin, filename, source).map((d) => d.id);

Deno.test("the planted source's body spans the lines asked for", () => {
  strictEqual(fn(MAX_FUNCTION_LINES).split("\n").length - 1, MAX_FUNCTION_LINES);
});

Deno.test("planted: a function one line over the bound in src/ is reported; at the bound it is not", () => {
  deepStrictEqual(reported("/r/src/a.ts", fn(MAX_FUNCTION_LINES + 1)), [
    "house/function-length",
  ]);
  deepStrictEqual(reported("/r/src/a.ts", fn(MAX_FUNCTION_LINES)), []);
});

Deno.test("planted: methods and arrow functions are measured too", () => {
  const body = `{\n${"    1;\n".repeat(MAX_FUNCTION_LINES)}  }`;
  deepStrictEqual(reported("/r/src/a.ts", `export class C {\n  m(): void ${body}\n}\n`), [
    "house/function-length",
  ]);
  deepStrictEqual(reported("/r/src/a.ts", `export const g = (): void => ${body};\n`), [
    "house/function-length",
  ]);
});

Deno.test("tests, test-only modules and code outside src/ are left out", () => {
  const long = fn(MAX_FUNCTION_LINES + 20);
  deepStrictEqual(reported("/r/src/a_test.ts", long), []);
  deepStrictEqual(reported("/r/src/test_model.ts", long), []);
  deepStrictEqual(reported("/r/bench/a.ts", long), []);
  strictEqual(isPublished("/r/src/engines/webgpu/core.ts"), true);
});

/** The longest file (lines) the house accepts in `src/` and `shaders/`, tests included. */
const MAX_FILE_LINES = 400;

/** Files under `dir` (`.ts`, `.wgsl`) longer than {@linkcode MAX_FILE_LINES}, as `path: lines`. */
async function longFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...await longFiles(path));
    else if (/\.(ts|wgsl)$/.test(e.name)) {
      const lines = (await Deno.readTextFile(path)).split("\n").length - 1;
      if (lines > MAX_FILE_LINES) out.push(`${path}: ${lines}`);
    }
  }
  return out.sort();
}

Deno.test("no file over 400 lines in src/ and shaders/", async () => {
  const root = new URL("../", import.meta.url).pathname;
  deepStrictEqual([...await longFiles(`${root}src`), ...await longFiles(`${root}shaders`)], []);
});

Deno.test("planted: a 401-line file is found, a 400-line one is not", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/sub`);
    await Deno.writeTextFile(`${dir}/sub/long.wgsl`, "x\n".repeat(MAX_FILE_LINES + 1));
    await Deno.writeTextFile(`${dir}/ok.ts`, "x\n".repeat(MAX_FILE_LINES));
    deepStrictEqual(await longFiles(dir), [`${dir}/sub/long.wgsl: ${MAX_FILE_LINES + 1}`]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
