/** The Deno Worker module: exposes the engine host, with checkpoints from disk, HTTP or Files. */
import { exposeHost } from "../../worker/host.ts";
import { specFiles } from "./file_source.ts";

// onnxruntime-web (the `ort` engine, imported on start) resolves its own URL against
// `location.origin`, which a Deno Worker started from a file reports as "null", an invalid base:
// the import throws. Deno's main thread has no `location`; the worker gets none either.
Object.defineProperty(globalThis, "location", { value: undefined, configurable: true });

exposeHost(specFiles);
