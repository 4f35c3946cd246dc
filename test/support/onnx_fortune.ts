/**
 * The fortune model as an ONNX export (transformers.js layout) for the OrtEngine tests: the
 * shared fixture `../shared/fixtures/onnx/fortune` beside the repository when it is there, else
 * an export of `models/fortune` made once into `.cache/onnx/fortune/` (`onnx/model.onnx` F32 and
 * `onnx/model_fp16.onnx` with the checkpoint's F16 weights, by `tools/peers/to_onnx.ts`), so a
 * clean clone runs the same tests. Run as a script, it makes the export and prints its folder
 * (what the Deno CLIs' `ort` engines take without `--model`: `src/adapters/deno/fortune_onnx.ts`).
 */
import {
  CACHED_ONNX_FORTUNE_DIR as CACHE,
  SHARED_ONNX_FORTUNE_DIR as SHARED,
} from "../../src/adapters/deno/fortune_onnx.ts";

const root = new URL("../../", import.meta.url);
const FORTUNE = new URL("models/fortune/", root).pathname;

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** The shared fixture's folder, or undefined when `../shared` does not have it (tests skip). */
export const SHARED_ONNX_FORTUNE: string | undefined = (() => {
  try {
    Deno.statSync(`${SHARED}onnx/model.onnx`);
    return SHARED;
  } catch {
    return undefined;
  }
})();

let made: Promise<string> | undefined;

/**
 * The export folder (ending in `/`): `config.json` and `onnx/model.onnx`, `onnx/model_fp16.onnx`;
 * the shared fixture when present, else `cachedOnnxFortune()`.
 */
export async function onnxFortune(): Promise<string> {
  return await exists(`${SHARED}onnx/model.onnx`) ? SHARED : await cachedOnnxFortune();
}

/** Kiln's own export of `models/fortune` in `.cache/onnx/fortune/` (made on first use). */
export function cachedOnnxFortune(): Promise<string> {
  return made ??= (async () => {
    if (await exists(`${CACHE}onnx/model_fp16.onnx`)) return CACHE;
    const { toOnnx } = await import("../../tools/peers/to_onnx.ts");
    await Deno.mkdir(`${CACHE}onnx`, { recursive: true });
    const tmp = `.tmp${Deno.pid}`;
    for (const name of ["config.json", "tokenizer.json"]) {
      await Deno.copyFile(`${FORTUNE}${name}`, `${CACHE}${name}${tmp}`);
      await Deno.rename(`${CACHE}${name}${tmp}`, `${CACHE}${name}`);
    }
    // model_fp16 last: its presence marks a complete export.
    for (const [name, dtype] of [["model", "f32"], ["model_fp16", "checkpoint"]] as const) {
      const out = `${CACHE}onnx/${name}.onnx`;
      await toOnnx(FORTUNE, `${out}${tmp}`, { dtype });
      await Deno.rename(`${out}${tmp}`, out);
    }
    return CACHE;
  })();
}

if (import.meta.main) console.log(await onnxFortune());
