/**
 * The browser Web Worker module: exposes the engine host, with checkpoints read over HTTP
 * through the model store (OPFS, Cache Storage; see `store/browser.ts`) or from `File`s handed over
 * by the page.
 */
import { exposeHost } from "../../worker/host.ts";
import { browserFiles } from "./host_files.ts";

exposeHost(browserFiles);
