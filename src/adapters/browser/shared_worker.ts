/**
 * The browser SharedWorker module: one engine per model for every tab of the origin (see
 * `worker/shared_host.ts`), with checkpoints read through the browser's model store (OPFS; over
 * HTTP where there is none, or with `cache: false`) or from `File`s handed over by a page.
 */
import { exposeSharedHost } from "../../worker/shared_host.ts";
import { browserFiles, hasWebGpu } from "./host_files.ts";

// Chromium gives shared workers WebGPU (checked on 156); where a browser does not, tabs fall back
// to a dedicated worker each (or to the service worker an app registers).
exposeSharedHost(browserFiles, { webgpu: hasWebGpu });
