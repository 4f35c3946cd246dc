// `npm start`: build the web demo (demo/, Vite) and serve the build on http://localhost, printing
// its URL. The page runs the embedded fortune model in a Web Worker on the browser's WebGPU.
// `--port N` picks the port (default 5173), `--open` also opens the default browser.
import { fileURLToPath } from "node:url";
import { runFlags } from "./flags.mjs";

const flags = runFlags({
  name: "start",
  command: "npm start --",
  about: "Build the web demo and serve it on http://localhost (the next free port if taken).",
  flags: {
    port: { type: "integer", min: 0, max: 65535, default: 5173, help: "the port to try first" },
    open: { type: "boolean", help: "also open the default browser" },
  },
});
// Vite is loaded after the command line is checked (a bad one exits at once).
const { build, preview } = await import("vite");
const configFile = fileURLToPath(new URL("../demo/vite.config.ts", import.meta.url));

console.log("building the demo…");
await build({ configFile });
const server = await preview({
  configFile,
  preview: {
    host: "127.0.0.1",
    port: Number(flags.port),
    strictPort: false,
    open: flags.open === true,
  },
});
const address = server.httpServer.address();
// localhost, not 127.0.0.1: browsers treat it as a secure context, where WebGPU exists.
console.log(`Kiln demo: http://localhost:${address.port}/  (Ctrl-C to stop)`);
