/**
 * Where the Deno CLIs' `ort` engines look for the fortune model's ONNX export when no `--model`
 * is given (these CLIs run from a checkout): the shared fixture `../shared/fixtures/onnx/fortune/`
 * beside the repository, else Kiln's own export in `.cache/onnx/fortune/`. Published code only
 * looks; the export is made by `test/support/onnx_fortune.ts` (the tests' first use of it, or
 * `deno run -A test/support/onnx_fortune.ts`).
 */
import { EngineError } from "../../contract/errors.ts";

const root = new URL("../../../", import.meta.url);

/** The shared fixture's folder (ending in `/`), which may not exist. */
export const SHARED_ONNX_FORTUNE_DIR: string =
  new URL("../shared/fixtures/onnx/fortune/", root).pathname;
/** Kiln's own export's folder (ending in `/`); `onnx/model_fp16.onnx` marks it complete. */
export const CACHED_ONNX_FORTUNE_DIR: string = new URL(".cache/onnx/fortune/", root).pathname;

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** The export folder found: the shared fixture's, else a complete cached export, else undefined. */
export function foundOnnxFortune(): string | undefined {
  if (isFile(`${SHARED_ONNX_FORTUNE_DIR}onnx/model.onnx`)) return SHARED_ONNX_FORTUNE_DIR;
  if (isFile(`${CACHED_ONNX_FORTUNE_DIR}onnx/model_fp16.onnx`)) return CACHED_ONNX_FORTUNE_DIR;
  return undefined;
}

/** {@linkcode foundOnnxFortune}, or `InvalidArgument` saying how to give or make one. */
export function requireOnnxFortune(engine: string): string {
  return foundOnnxFortune() ?? (() => {
    throw EngineError.invalidArgument(
      `${engine}: no --model and no ONNX export of fortune (${SHARED_ONNX_FORTUNE_DIR} or ` +
        `${CACHED_ONNX_FORTUNE_DIR}): pass --model DIR, or make the export with ` +
        "`deno run -A test/support/onnx_fortune.ts`",
    );
  })();
}
