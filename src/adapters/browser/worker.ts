/** The browser Web Worker module: exposes the engine host, with checkpoints read over HTTP. */
import { EngineError } from "../../contract/errors.ts";
import { urlFiles } from "../../model/source.ts";
import { exposeHost } from "../../worker/host.ts";

exposeHost((spec) => {
  if (spec.kind !== "url") {
    throw EngineError.invalidArgument("a browser worker loads models from URLs only");
  }
  return urlFiles(spec.base);
});
