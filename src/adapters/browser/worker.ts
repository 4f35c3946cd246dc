/**
 * The browser Web Worker module: exposes the engine host, with checkpoints read over HTTP
 * through the model store (OPFS, Cache Storage; see `storage.ts`) or from `File`s handed over
 * by the page.
 */
import { EngineError } from "../../contract/errors.ts";
import { fileListFiles } from "../../model/source.ts";
import { exposeHost } from "../../worker/host.ts";
import { storedFiles } from "./storage.ts";

exposeHost((spec) => {
  if (spec.kind === "url") return storedFiles(spec.base, spec.cache !== false);
  if (spec.kind === "files") return fileListFiles(spec.files);
  throw EngineError.invalidArgument("a browser worker loads models from URLs or Files only");
});
