// deno-lint-ignore-file explicit-module-boundary-types
// The fortune model's ONNX export where a page can fetch it: `onnxFortune()` (Deno,
// `onnx_fortune.ts`) finds or makes it, and a folder outside the repository (the shared fixture)
// is copied under `.cache/onnx-web/`, which the test server serves. Returns the URL path.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync } from "node:fs";
import { relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export function onnxFortunePath() {
  const code = 'import { onnxFortune } from "./test/support/onnx_fortune.ts";' +
    "console.log(await onnxFortune());";
  const out = execFileSync(`${ROOT}node_modules/.bin/deno`, ["eval", code], {
    cwd: ROOT,
    encoding: "utf8",
  });
  let dir = resolve(ROOT, out.trim().split("\n").pop());
  if (relative(ROOT, dir).startsWith("..")) {
    const copy = `${ROOT}.cache/onnx-web/fortune`;
    if (!existsSync(`${copy}/onnx/model.onnx`)) cpSync(dir, copy, { recursive: true });
    dir = copy;
  }
  return `/${relative(ROOT, dir)}/`;
}
