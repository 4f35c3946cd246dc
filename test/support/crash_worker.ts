/** A worker that runs the real engine host, and dies on demand (message "crash"). */
import { specFiles } from "../../src/adapters/deno/file_source.ts";
import { exposeHost } from "../../src/worker/host.ts";

const crashOnDemand: EventListenerObject = {
  handleEvent(e: Event) {
    if ((e as MessageEvent).data === "crash") {
      setTimeout(() => {
        throw new Error("deliberate crash");
      });
    }
  },
};
globalThis.addEventListener("message", crashOnDemand);
exposeHost(specFiles);
