/** The Deno Worker module: exposes the engine host, with checkpoints from disk, HTTP or Files. */
import { exposeHost } from "../../worker/host.ts";
import { specFiles } from "./file_source.ts";

exposeHost(specFiles);
