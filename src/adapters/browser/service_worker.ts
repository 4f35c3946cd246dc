/**
 * The browser service-worker module: one engine per model for every tab of the origin, where a
 * browser gives no WebGPU in a `SharedWorker` (see `worker/service_host.ts`). Kiln cannot
 * register a service worker for an app (its URL and scope are the app's): the app registers this
 * script itself, `navigator.serviceWorker.register(url, { type: "module" })`, and passes the
 * registration to `openModel({ share: true, serviceWorker })`. Checkpoints are read as in the
 * shared worker: through the model store, or from `File`s a page hands over. A service worker
 * cannot `import()`, so this must be one bundle (the package's `kiln_service_worker.js` is).
 */
import { EngineError } from "../../contract/errors.ts";
import { fileListFiles } from "../../model/source.ts";
import { exposeServiceHost } from "../../worker/service_host.ts";
import { storedFiles } from "./storage.ts";

let adapter: Promise<boolean> | undefined;

exposeServiceHost((spec) => {
  if (spec.kind === "url") return storedFiles(spec.base, spec.cache !== false);
  if (spec.kind === "files") return fileListFiles(spec.files);
  throw EngineError.invalidArgument("a browser worker loads models from URLs or Files only");
}, {
  webgpu: () =>
    adapter ??= (async () => {
      const gpu = (globalThis.navigator as { gpu?: GPU } | undefined)?.gpu;
      return (await gpu?.requestAdapter().catch(() => null)) != null;
    })(),
});
