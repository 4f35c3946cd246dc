/**
 * The browser SharedWorker module: one engine per model for every tab of the origin (see
 * `worker/shared_host.ts`), with checkpoints read through the model store (OPFS, as the dedicated
 * worker reads them) or from `File`s handed over by a page.
 */
import { EngineError } from "../../contract/errors.ts";
import { fileListFiles } from "../../model/source.ts";
import { exposeSharedHost } from "../../worker/shared_host.ts";
import { storedFiles } from "./storage.ts";

let adapter: Promise<boolean> | undefined;

exposeSharedHost((spec) => {
  if (spec.kind === "url") return storedFiles(spec.base, spec.cache !== false);
  if (spec.kind === "files") return fileListFiles(spec.files);
  throw EngineError.invalidArgument("a browser worker loads models from URLs or Files only");
}, {
  // Chromium gives shared workers WebGPU (checked on 156); where a browser does not, tabs fall
  // back to a dedicated worker each.
  webgpu: () =>
    adapter ??= (async () => {
      const gpu = (globalThis.navigator as { gpu?: GPU } | undefined)?.gpu;
      return (await gpu?.requestAdapter().catch(() => null)) != null;
    })(),
});
