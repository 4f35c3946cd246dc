/**
 * The npm package's shader module (`scripts/build_package.mjs` replaces `gpu/shader_text.js`
 * with it) holds every file under shaders/, fragments in subfolders included, and composes
 * every quantized kernel variant the way the sources do.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { shaderModule, stripWgslComments } from "../scripts/build_package.mjs";
import { composeShader } from "../src/gpu/shader_compose.ts";
import { loadShaderFile } from "../src/gpu/shader_text.ts";
import { QUANT_FORMATS, QUANT_TYPES } from "../src/gpu/formats/registry.ts";

const SHADERS = new URL("../shaders/", import.meta.url);

async function sourceFiles(dir = SHADERS, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.isDirectory) {
      out.push(...await sourceFiles(new URL(`${e.name}/`, dir), `${prefix}${e.name}/`));
    } else if (/\.(wgsl|json)$/.test(e.name)) out.push(`${prefix}${e.name}`);
  }
  return out.sort();
}

/** The built module, imported from a temporary file. */
async function builtLoader(): Promise<(path: string) => Promise<string>> {
  const file = await Deno.makeTempFile({ suffix: ".mjs" });
  try {
    await Deno.writeTextFile(file, shaderModule());
    const mod = await import(`file://${file}`) as {
      loadShaderFile: (p: string) => Promise<string>;
    };
    return mod.loadShaderFile;
  } finally {
    await Deno.remove(file);
  }
}

Deno.test("the package's shader module: every file under shaders/, WGSL less its comments", async () => {
  const load = await builtLoader();
  const files = await sourceFiles();
  ok(files.includes("lib/quant_words.wgsl") && files.includes("formats/q4_k.wgsl"));
  for (const path of files) {
    const source = await loadShaderFile(path);
    const built = await load(path);
    if (path.endsWith(".wgsl")) {
      equal(built, stripWgslComments(source), path);
      ok(!/\/\/(?!!)/.test(built), `${path}: a comment left`);
    } else {
      deepStrictEqual(JSON.parse(built), JSON.parse(source), path);
    }
  }
  let missing = "";
  await load("nothing.wgsl").catch((e: Error) => missing = e.message);
  ok(missing.includes("shaders/nothing.wgsl: not in this build"), missing);
});

Deno.test("the package's shader module composes every quantized kernel variant", async () => {
  const load = await builtLoader();
  for (const type of QUANT_TYPES) {
    const { fragment, blockBytes } = QUANT_FORMATS[type];
    const text = await composeShader(`product/matvec:format=${fragment}`, load);
    ok(text.includes(`const BLOCK_BYTES: u32 = ${blockBytes}u;`), type);
    ok(text.includes("fn word_at(") && text.includes("fn embed("), type);
    ok(!/^\s*\/\/!/m.test(text), `${type}: a directive left`);
  }
});

Deno.test("stripWgslComments keeps code and composer directives", () => {
  equal(
    stripWgslComments("// head\n//! import lib/a\nlet a = 1; // why\n\n  // more\nfn f() {}\n"),
    "//! import lib/a\nlet a = 1;\nfn f() {}\n",
  );
});
