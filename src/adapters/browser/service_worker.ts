/**
 * The browser service-worker module: one engine per model for every tab of the origin, where a
 * browser gives no WebGPU in a `SharedWorker` (see `worker/service_host.ts`). Kiln cannot
 * register a service worker for an app (its URL and scope are the app's): the app registers this
 * script itself, `navigator.serviceWorker.register(url, { type: "module" })`, and passes the
 * registration to `openModel({ share: true, serviceWorker })`. Checkpoints are read as in the
 * shared worker: through the model store, or from `File`s a page hands over. A service worker
 * cannot `import()`, so this must be one bundle (the package's `kiln_service_worker.js` is).
 */
import { exposeServiceHost } from "../../worker/service_host.ts";
import { browserFiles, hasWebGpu } from "./host_files.ts";

exposeServiceHost(browserFiles, { webgpu: hasWebGpu });
