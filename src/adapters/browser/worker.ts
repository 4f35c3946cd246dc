/**
 * The browser Web Worker module: exposes the engine host, with checkpoints read over HTTP or
 * from `File`s handed over by the page.
 */
import { EngineError } from "../../contract/errors.ts";
import { fileListFiles } from "../../model/source.ts";
import { urlFiles } from "../../model/url_source.ts";
import { exposeHost } from "../../worker/host.ts";

exposeHost((spec) => {
  if (spec.kind === "url") return urlFiles(spec.base);
  if (spec.kind === "files") return fileListFiles(spec.files);
  throw EngineError.invalidArgument("a browser worker loads models from URLs or Files only");
});
