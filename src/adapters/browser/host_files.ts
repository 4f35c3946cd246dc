/**
 * What every browser engine host (dedicated, shared and service worker) needs from its realm:
 * the files of the model a `start()` names, read through the model store (OPFS, Cache Storage;
 * see `store/browser.ts`) or from `File`s a page hands over; and whether the realm has a WebGPU adapter.
 */
import { EngineError } from "../../contract/errors.ts";
import { fileListFiles, type ModelFiles } from "../../formats/source.ts";
import type { ModelSpec } from "../../worker/protocol.ts";
import { storedFiles } from "../../store/browser.ts";

/** The files `spec` names, as a browser host reads them. */
export function browserFiles(spec: ModelSpec): ModelFiles {
  if (spec.kind === "url") return storedFiles(spec.base, spec.cache !== false);
  if (spec.kind === "files") return fileListFiles(spec.files);
  throw EngineError.invalidArgument("a browser worker loads models from URLs or Files only");
}

let adapter: Promise<boolean> | undefined;

/** Whether this realm gives a WebGPU adapter (asked once). */
export function hasWebGpu(): Promise<boolean> {
  return adapter ??= (async () => {
    const gpu = (globalThis.navigator as { gpu?: GPU } | undefined)?.gpu;
    return (await gpu?.requestAdapter().catch(() => null)) != null;
  })();
}
