/** The Deno Worker module: exposes the engine host, with checkpoints read from disk or HTTP. */
import { urlFiles } from "../../model/source.ts";
import { exposeHost } from "../../worker/host.ts";
import { dirFiles } from "./file_source.ts";

exposeHost((spec) => (spec.kind === "dir" ? dirFiles(spec.path) : urlFiles(spec.base)));
