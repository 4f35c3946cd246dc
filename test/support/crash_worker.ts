/** A worker that runs the real engine host, and dies on demand (message "crash"). */
import { urlFiles } from "../../src/model/source.ts";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { exposeHost } from "../../src/worker/host.ts";

self.addEventListener("message", (e: MessageEvent) => {
  if (e.data === "crash") {
    setTimeout(() => {
      throw new Error("deliberate crash");
    });
  }
});
exposeHost((spec) => (spec.kind === "dir" ? dirFiles(spec.path) : urlFiles(spec.base)));
